//! A duck client has no create or update: a program calling them does not compile, and
//! rustc says the method is missing (a `compile_fail` doctest would pass on any error).
//! The programs are compiled with the `rustc` on the PATH against the dynrec library this
//! test was built with; a program using `get` and `patch` compiling proves the set-up.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory of this test's dependencies (`target/debug/deps`).
fn deps_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().to_path_buf()
}

/// The newest dynrec library in `deps`.
fn dynrec_rlib(deps: &Path) -> PathBuf {
    std::fs::read_dir(deps)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            name.starts_with("libdynrec-") && name.ends_with(".rlib")
        })
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .expect("the dynrec library is built")
}

/// Compiles `body` inside an async fn with a duck client `ducks` and a duck `web`;
/// returns whether it compiled and rustc's messages.
fn compile(body: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("duck_use.rs");
    std::fs::write(
        &source,
        format!(
            "pub async fn demo(client: dynrec::client::Client) -> Result<(), dynrec::client::Error> {{\n\
             use dynrec::{{duck_types::PodSpecable, object::{{Gvk, ObjectKey}}}};\n\
             let ducks = client.duck::<PodSpecable>();\n\
             let gvk: Gvk = \"apps/v1/Deployment\".parse()?;\n\
             let web = ducks.get(&gvk, &ObjectKey::namespaced(\"default\", \"web\")).await?;\n\
             {body}\n\
             Ok(())\n}}\n"
        ),
    )
    .unwrap();
    let deps = deps_dir();
    let output = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args([
            "--edition",
            "2024",
            "--crate-type",
            "lib",
            "--emit",
            "metadata",
        ])
        .arg("--out-dir")
        .arg(dir.path())
        .arg("-L")
        .arg(format!("dependency={}", deps.display()))
        .arg("--extern")
        .arg(format!("dynrec={}", dynrec_rlib(&deps).display()))
        .arg(&source)
        .output()
        .expect("rustc runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).to_string(),
    )
}

#[test]
fn a_duck_client_patches() {
    let (compiled, messages) = compile("ducks.patch(&web).await?;");
    assert!(compiled, "the set-up compiles a valid use:\n{messages}");
}

#[test]
fn a_duck_client_has_no_create_or_update() {
    for method in ["create", "update"] {
        let (compiled, messages) = compile(&format!("ducks.{method}(&web).await?;"));
        assert!(!compiled, "{method} compiled");
        assert!(
            messages.contains(&format!("no method named `{method}` found")),
            "rustc names the missing {method}:\n{messages}"
        );
    }
}
