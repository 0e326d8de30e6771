//! `rtconv diff`'s significance test against scipy's Mann-Whitney U.

use std::process::Command;

use ringtrace_tests::scratch;

use crate::diff::{diff, dump_of, durations, rows};

/// scipy's two-sided asymptotic Mann-Whitney p-value for `a` against `b`.
fn scipy_p(a: &[u64], b: &[u64]) -> f64 {
    let script = format!(
        "from scipy.stats import mannwhitneyu\nprint(repr(mannwhitneyu({a:?}, {b:?}, use_continuity=True, \
         alternative='two-sided', method='asymptotic').pvalue))"
    );
    let out = Command::new("/usr/bin/python3")
        .args(["-c", &script])
        .output()
        .expect("/usr/bin/python3 with scipy (tests/setup installs python3-scipy)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().parse().unwrap()
}

#[test]
fn p_values_are_scipys() {
    let dir = scratch("diff-scipy");
    let base = durations(1, 300, 400, 600);
    // The same distribution drawn again; shifted by 5 %; and with ties in every bucket.
    let cases = [
        ("same", durations(2, 280, 400, 600)),
        ("shifted", durations(3, 320, 430, 600)),
        ("ties", durations(4, 250, 400, 20)),
    ];
    let base_path = dir.join("base.rtd");
    dump_of(&base_path, &base);
    for (name, new) in cases {
        let path = dir.join(format!("{name}.rtd"));
        dump_of(&path, &new);
        let (code, out, stderr) = diff(&base_path, &path, &["-f", "json"]);
        assert_eq!(code, 0, "{stderr}");
        let work = &rows(&out)["work"];
        let ours = work["p_value"].as_f64().unwrap();
        let theirs = scipy_p(&base, &new);
        assert!((ours - theirs).abs() <= 1e-9 * theirs.max(1e-300) + 1e-15, "{name}: {ours} vs scipy {theirs}");
        // Slower: a new call outlasts a base call more often than not (counted pair by pair).
        let pairs: f64 = new
            .iter()
            .flat_map(|&b| base.iter().map(move |&a| (b > a) as u8 as f64 + 0.5 * (b == a) as u8 as f64))
            .sum();
        let slower = pairs / (base.len() * new.len()) as f64;
        assert!((work["slower_probability"].as_f64().unwrap() - slower).abs() < 1e-12);
        let expected = if theirs >= 0.01 {
            "~"
        } else if slower > 0.5 {
            "slower"
        } else {
            "faster"
        };
        assert_eq!(work["change"], expected, "{name}: p = {theirs}");
    }
}
