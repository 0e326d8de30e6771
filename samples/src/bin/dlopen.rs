//! Loads a shared library with `dlopen` and records spans keyed by the
//! addresses of its functions, so their names must come from that library's
//! own file: `dlopen --lib PATH --out DUMP`.
//!
//! Records 5 spans keyed by `demo_work` and 3 keyed by `demo_other`, each
//! around a call of that function (samples/c/demo.c).

use std::ffi::CString;

use ringtrace::Span;
use ringtrace::clock::Fast;

type DemoFn = unsafe extern "C" fn(i32) -> i32;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let (Some(lib), Some(out)) = (value("--lib"), value("--out")) else {
        eprintln!("usage: dlopen --lib PATH --out DUMP");
        std::process::exit(2);
    };
    let lib = CString::new(lib).expect("path without NUL");
    // SAFETY: dlopen with a valid C string; the library only defines two plain functions.
    let handle = unsafe { libc::dlopen(lib.as_ptr(), libc::RTLD_NOW) };
    assert!(!handle.is_null(), "dlopen failed");
    for (name, calls) in [("demo_work", 5), ("demo_other", 3)] {
        let symbol = CString::new(name).unwrap();
        // SAFETY: the handle is open; the symbol is a function of type DemoFn (samples/c/demo.c).
        let f: DemoFn = unsafe { std::mem::transmute(libc::dlsym(handle, symbol.as_ptr())) };
        for i in 0..calls {
            let _span = Span::<Fast>::enter(f as usize as u64);
            // SAFETY: a plain C function taking and returning int.
            std::hint::black_box(unsafe { f(1000 + i) });
        }
    }
    let stats = ringtrace::dump_to_file(&out).expect("dump written");
    eprintln!("dlopen: wrote {out} ({} spans)", stats.records);
}
