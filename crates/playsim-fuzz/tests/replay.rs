//! Every committed input of every target, through the target, on stable: the corpora seeded
//! from the fixtures (`corpus/TARGET/`) and every crash input found (`crashes/TARGET/`, kept
//! as regressions). A panic names the target and the file.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect();
    files.sort();
    files
}

#[test]
fn every_committed_input_goes_through_its_target_without_a_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut failures = Vec::new();
    let mut replayed = 0;
    for target in playsim_fuzz::TARGETS {
        let seeds = inputs(&root.join("corpus").join(target.name));
        assert!(!seeds.is_empty(), "target {} has no seed in corpus/{}/", target.name, target.name);
        for file in seeds.iter().chain(&inputs(&root.join("crashes").join(target.name))) {
            let data = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            if catch_unwind(AssertUnwindSafe(|| (target.run)(&data))).is_err() {
                failures.push(format!("{}: {}", target.name, file.display()));
            }
            replayed += 1;
        }
    }
    assert!(failures.is_empty(), "these inputs panicked:\n  {}", failures.join("\n  "));
    eprintln!("replayed {replayed} inputs through {} targets", playsim_fuzz::TARGETS.len());
}

#[test]
fn every_target_has_a_libfuzzer_binary_of_its_name() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap_or_default();
    for target in playsim_fuzz::TARGETS {
        let source = root.join("fuzz_targets").join(format!("{}.rs", target.name));
        let text = std::fs::read_to_string(&source).unwrap_or_else(|e| panic!("{}: {e}", source.display()));
        assert!(
            text.contains(&format!("playsim_fuzz::{}(", target.name)),
            "{} calls another target",
            source.display()
        );
        assert!(
            manifest.contains(&format!("name = \"{}\"", target.name)),
            "fuzz/Cargo.toml lacks [[bin]] {}",
            target.name
        );
    }
}
