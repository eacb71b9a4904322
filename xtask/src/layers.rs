//! `cargo xtask layers` (and a step of `cargo xtask test`): the gateway's
//! modules run one way. The layer list is read from
//! `docs/architecture.md` (its numbered list under "## Layers", one line
//! per layer naming the top-level modules of `server/src` in backticks),
//! and every `crate::…` path in the non-test code of `server/src` is held
//! against it: a module may name its own layer or a lower one, never a
//! higher one. A module the list does not name fails too, so a new one
//! has to be placed. Test code (`tests.rs`, `tests/` folders, and what
//! follows a file's `#[cfg(test)]`) may reach anywhere.

use anyhow::{Context, bail};
use std::{
    collections::{HashMap, HashSet},
    fs,
    path::{Path, PathBuf},
};

use crate::util;

/// The architecture document the list lives in.
const DOC: &str = "docs/architecture.md";

pub fn run() -> anyhow::Result<()> {
    let root = util::root();
    let doc = fs::read_to_string(root.join(DOC)).with_context(|| format!("reading {DOC}"))?;
    let layers = parse_layers(&doc)?;
    let src = root.join("server/src");
    let files: Vec<(String, PathBuf)> = rust_files(&src)?
        .into_iter()
        .map(|f| (f.strip_prefix(&src).unwrap_or(&f).to_string_lossy().replace('\\', "/"), f))
        .collect();
    let modules: HashSet<String> = files.iter().map(|(rel, _)| module_of(rel).to_owned()).collect();
    let mut violations = Vec::new();
    for (rel, file) in files.iter().filter(|(rel, _)| !is_test_path(rel)) {
        let text = fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        violations.extend(check_file(rel, &text, &layers, &modules));
    }
    if !violations.is_empty() {
        bail!("imports that run up the layers of {DOC}:\n{}", violations.join("\n"));
    }
    println!("layers: every crate:: import of server/src runs down the {} layers of {DOC}", layers_count(&layers));
    Ok(())
}

/// Module name → its layer (1 is the top).
type Layers = HashMap<String, usize>;

fn layers_count(layers: &Layers) -> usize {
    layers.values().copied().max().unwrap_or(0)
}

/// The numbered list under `## Layers`: `1. \`main\`, \`workers\` — …`.
fn parse_layers(doc: &str) -> anyhow::Result<Layers> {
    let mut layers = Layers::new();
    let section = doc.split("\n## ").find(|s| s.starts_with("Layers")).context("no \"## Layers\" section")?;
    for line in section.lines() {
        let Some((number, rest)) = line.trim().split_once(". ") else { continue };
        let Ok(layer) = number.parse::<usize>() else { continue };
        let names = rest.split('`').skip(1).step_by(2);
        for name in names.take_while(|n| !n.contains(' ')) {
            layers.insert(name.to_owned(), layer);
        }
    }
    if layers.is_empty() {
        bail!("the \"## Layers\" section of {DOC} lists no modules");
    }
    Ok(layers)
}

fn rust_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            files.extend(rust_files(&path)?);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

fn is_test_path(rel: &str) -> bool {
    rel.ends_with("/tests.rs") || rel.ends_with("_tests.rs") || rel.contains("/tests/")
}

/// The top-level module a file of `server/src` belongs to.
fn module_of(rel: &str) -> &str {
    let first = rel.split('/').next().unwrap_or(rel);
    first.strip_suffix(".rs").unwrap_or(first)
}

/// The violations of one file: each `crate::` module it names above its
/// own. A name that is no module of `modules` is an item of the crate
/// root (`lib`).
fn check_file(rel: &str, text: &str, layers: &Layers, modules: &HashSet<String>) -> Vec<String> {
    let module = module_of(rel);
    let Some(&own) = layers.get(module) else {
        return vec![format!("server/src/{rel}: module `{module}` is in no layer of {DOC}: add it to the list")];
    };
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    let mut found: Vec<String> = Vec::new();
    for (line_no, line) in code.lines().enumerate() {
        let line = line.split("//").next().unwrap_or("");
        for named in crate_modules(line, code, line_no) {
            let named = if modules.contains(&named) { named } else { "lib".to_owned() };
            if named == module {
                continue;
            }
            match layers.get(&named) {
                Some(&layer) if layer < own => found.push(format!(
                    "server/src/{rel}:{}: `crate::{named}` runs up from layer {own} ({module}) to layer {layer} ({named})",
                    line_no + 1
                )),
                Some(_) => {}
                None => found.push(format!(
                    "server/src/{rel}:{}: `crate::{named}` names a module in no layer of {DOC}",
                    line_no + 1
                )),
            }
        }
    }
    found.dedup();
    found
}

/// The top-level modules named by `crate::` paths starting on `line`; a
/// `crate::{…}` group may run over the following lines of `code`.
fn crate_modules(line: &str, code: &str, line_no: usize) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if rest.starts_with('{') {
            let group: String = code.lines().skip(line_no).collect::<Vec<_>>().join("\n");
            let start = group.find(rest).map_or(0, |i| i + 1);
            names.extend(group_heads(&group[start..]));
        } else {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                names.push(name);
            }
        }
    }
    names
}

/// The first identifier of each path at the top level of a `{…}` group
/// (the text after its opening brace).
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 1;
    let mut expecting = true;
    let mut ident = String::new();
    for c in group.chars() {
        if c.is_alphanumeric() || c == '_' {
            ident.push(c);
            continue;
        }
        if !ident.is_empty() {
            if expecting && depth == 1 && ident != "self" {
                heads.push(std::mem::take(&mut ident));
            }
            ident.clear();
            expecting = false;
        }
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => expecting = true,
            _ => {}
        }
    }
    heads
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modules() -> HashSet<String> {
        ["proxy", "api", "routing", "db", "newthing"].into_iter().map(String::from).collect()
    }

    const DOC_TEXT: &str =
        "# x\n\n## Layers\n\n1. `proxy`, `api` — edges\n2. `routing`\n3. `db`\n\n## Other\n1. `nope`\n";

    #[test]
    fn the_list_is_read_from_its_section_only() {
        let layers = parse_layers(DOC_TEXT).unwrap();
        assert_eq!(layers.get("proxy"), Some(&1));
        assert_eq!(layers.get("api"), Some(&1));
        assert_eq!(layers.get("db"), Some(&3));
        assert_eq!(layers.get("nope"), None);
    }

    #[test]
    fn an_import_that_runs_up_is_named_with_its_file_and_line() {
        let layers = parse_layers(DOC_TEXT).unwrap();
        let code = "use crate::{\n    db::x,\n    proxy::{a, b},\n};\nfn f() { crate::db::now(); }\n";
        let found = check_file("routing/view.rs", code, &layers, &modules());
        assert_eq!(
            found,
            ["server/src/routing/view.rs:1: `crate::proxy` runs up from layer 2 (routing) to layer 1 (proxy)"]
        );
        assert!(
            check_file("proxy/x.rs", code, &layers, &modules()).is_empty(),
            "downward and same-module imports pass"
        );
    }

    #[test]
    fn test_code_and_comments_are_not_held_against_the_list() {
        let layers = parse_layers(DOC_TEXT).unwrap();
        let code = "// crate::proxy in a comment\nfn f() {}\n#[cfg(test)]\nmod tests { use crate::proxy::x; }\n";
        assert!(check_file("db/x.rs", code, &layers, &modules()).is_empty());
        assert!(is_test_path("db/x/tests.rs") && is_test_path("protocols/translate/more_directions_tests.rs"));
    }

    #[test]
    fn a_module_in_no_layer_fails() {
        let layers = parse_layers(DOC_TEXT).unwrap();
        let found = check_file("newthing.rs", "fn f() {}", &layers, &modules());
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("`newthing` is in no layer"), "{found:?}");
    }
}
