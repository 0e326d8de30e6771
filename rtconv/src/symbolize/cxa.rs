//! The C++ runtime's demangler (`__cxa_demangle`, libstdc++'s copy of the
//! one GNU addr2line and c++filt use), for the Itanium names `cpp_demangle`
//! cannot read — template arguments with unresolved-name expressions, as
//! libstdc++'s `enable_if` overloads have.
//!
//! Found at run time (`dlopen` of `libstdc++.so.6`), never linked: where no
//! C++ runtime is installed, such names stay mangled, as before. Only names
//! that start like an Itanium name and are at most [`MAX_NAME`] bytes are
//! passed to it.

use std::ffi::{CStr, CString, c_char, c_int};
use std::sync::OnceLock;

/// The longest name given to the runtime's demangler.
pub const MAX_NAME: usize = 4096;

/// `__cxa_demangle(mangled, buffer, length, status)`: a `malloc`ed string, or null with a status.
type Demangle = unsafe extern "C" fn(*const c_char, *mut c_char, *mut usize, *mut c_int) -> *mut c_char;

/// The runtime's `__cxa_demangle`, if a C++ runtime can be loaded.
fn function() -> Option<Demangle> {
    static FOUND: OnceLock<Option<Demangle>> = OnceLock::new();
    *FOUND.get_or_init(|| {
        // SAFETY: the library name is a NUL-terminated constant; the handle is never closed,
        // so what is found in it stays valid for the life of the process.
        let library = unsafe { libc::dlopen(c"libstdc++.so.6".as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
        if library.is_null() {
            return None;
        }
        // SAFETY: `library` is a live handle and the symbol name a NUL-terminated constant.
        let symbol = unsafe { libc::dlsym(library, c"__cxa_demangle".as_ptr()) };
        if symbol.is_null() {
            return None;
        }
        // SAFETY: `__cxa_demangle` is declared in the Itanium C++ ABI (cxxabi.h) with exactly
        // this C signature: (const char*, char*, size_t*, int*) -> char*.
        Some(unsafe { std::mem::transmute::<*mut libc::c_void, Demangle>(symbol) })
    })
}

/// `name` demangled by the C++ runtime, if it is an Itanium name the runtime reads.
pub fn demangle(name: &str) -> Option<String> {
    if !name.starts_with("_Z") || name.len() > MAX_NAME {
        return None;
    }
    let demangle = function()?;
    let mangled = CString::new(name).ok()?;
    let mut status: c_int = 0;
    // SAFETY: `mangled` is NUL-terminated and outlives the call; a null buffer and length ask the
    // function to allocate the result with malloc; `status` is a valid place for the status.
    let out = unsafe { demangle(mangled.as_ptr(), std::ptr::null_mut(), std::ptr::null_mut(), &mut status) };
    if out.is_null() {
        return None;
    }
    // SAFETY: a non-null result is a NUL-terminated string the function allocated for us.
    let text = (status == 0).then(|| unsafe { CStr::from_ptr(out) }.to_string_lossy().into_owned());
    // SAFETY: `out` came from malloc in `__cxa_demangle` and is freed once, here.
    unsafe { libc::free(out.cast()) };
    text
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_cpp_demangle_cannot_read_are_demangled_as_cxxfilt_does() {
        // From cppcheck 2.10 built with g++ 12: cpp_demangle 0.5 leaves it mangled.
        let name = "_ZSteqIcEN9__gnu_cxx11__enable_ifIXsrSt9__is_charIT_E7__valueEbE6__typeERKNSt7__cxx1112\
                    basic_stringIS3_St11char_traitsIS3_ESaIS3_EEESE_";
        assert_eq!(addr2line::demangle(name, addr2line::gimli::DW_LANG_C_plus_plus), None);
        assert_eq!(
            super::demangle(name).as_deref(),
            Some(
                "__gnu_cxx::__enable_if<std::__is_char<char>::__value, bool>::__type std::operator==<char>(\
                 std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, \
                 std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)"
            )
        );
        assert_eq!(super::demangle("main"), None);
        assert_eq!(super::demangle("_Z"), None);
    }
}
