//! The CPU a bench ran on, printed with its figures (shared by the recorder's benches).

/// The CPU the figures were measured on, as `/proc/cpuinfo` names it (with its family and model),
/// and, in an unoptimized build (CI's smoke run), that the figures are not the recorder's cost.
pub fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .and_then(|l| l.split_once(':'))
            .map_or("?", |(_, v)| v.trim())
    };
    let cpu = format!("CPU: {} (family {}, model {})", field("model name"), field("cpu family"), field("model"));
    if cfg!(debug_assertions) {
        cpu + "\nAn unoptimized build (--profile dev): these figures say that the bench runs, not what anything costs"
    } else {
        cpu
    }
}
