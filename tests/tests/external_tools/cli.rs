//! The man pages, rendered by groff.

use ringtrace_tests::{scratch, tool};

use crate::cli::{rtconv_in, text};

#[test]
fn man_pages_render_in_groff_without_warnings() {
    let dir = scratch("cli-man");
    let page = rtconv_in(&dir, &["man"]);
    assert!(page.status.success());
    std::fs::write(dir.join("rtconv.1"), &page.stdout).unwrap();
    let pages = rtconv_in(&dir, &["man", "-o", "man"]);
    assert!(pages.status.success(), "{}", text(&pages.stderr));
    for name in ["rtconv.1", "rtconv-convert.1", "rtconv-pack.1", "rtconv-stats.1"] {
        let path = dir.join("man").join(name);
        assert!(path.is_file(), "{name} was not written");
        let rendered = tool("groff").args(["-man", "-Tutf8", "-P", "-cbou", "-ww"]).arg(&path).output().unwrap();
        assert!(rendered.status.success());
        assert_eq!(text(&rendered.stderr), "", "groff warns about {name}");
        let shown = text(&rendered.stdout);
        assert!(shown.contains("SYNOPSIS"), "{name}: {shown}");
    }
    let main =
        text(&tool("groff").args(["-man", "-Tutf8", "-P", "-cbou"]).arg(dir.join("rtconv.1")).output().unwrap().stdout);
    assert!(main.contains("pack") && main.contains("--color"), "{main}");
}
