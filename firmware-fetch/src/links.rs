//! Symbolic links inside a firmware tree: from a package's tar entries, or from the
//! `Link: a -> b` lines of linux-firmware's WHENCE file (the git tree stores no links;
//! its install script makes them from WHENCE). Paths are relative to the firmware root.

use std::collections::HashMap;

/// Links by the path of the link; each target is stored as a path from the firmware root
/// (`None` for a target outside the tree).
#[derive(Debug, Default, Clone)]
pub struct LinkTable {
    links: HashMap<String, Option<String>>,
}

/// How many links one lookup may follow before it is treated as a loop.
const MAX_HOPS: usize = 40;

impl LinkTable {
    pub fn new() -> LinkTable {
        LinkTable::default()
    }

    /// Records that `link` points at `target`.
    pub fn insert(&mut self, link: &str, target: &str) {
        let link = normalize(link);
        let from_root = if target.starts_with('/') {
            strip_firmware_root(target).and_then(normalize_checked)
        } else {
            let parent = link.rsplit_once('/').map_or("", |(dir, _)| dir);
            normalize_checked(&format!("{parent}/{target}"))
        };
        self.links.insert(link, from_root);
    }

    /// Reads the `Link:` lines of a linux-firmware WHENCE file.
    pub fn from_whence(text: &str) -> LinkTable {
        let mut table = LinkTable::new();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("Link:") else {
                continue;
            };
            if let Some((link, target)) = rest.split_once("->") {
                table.insert(link.trim(), target.trim());
            }
        }
        table
    }

    pub fn len(&self) -> usize {
        self.links.len()
    }

    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// The path that holds the bytes of `path` once every link on the way is followed,
    /// at any level (`nvidia/ga104/gsp -> ../ga102/gsp` as well as file links).
    /// `None` for a loop or a link that leaves the tree.
    pub fn resolve(&self, path: &str) -> Option<String> {
        let mut current = normalize(path);
        let mut hops = 0;
        'restart: loop {
            let parts: Vec<&str> = current.split('/').collect();
            for i in 1..=parts.len() {
                let prefix = parts[..i].join("/");
                if let Some(target) = self.links.get(&prefix) {
                    hops += 1;
                    if hops > MAX_HOPS {
                        return None;
                    }
                    let mut joined = target.clone()?;
                    for rest in &parts[i..] {
                        joined.push('/');
                        joined.push_str(rest);
                    }
                    current = normalize_checked(&joined)?;
                    continue 'restart;
                }
            }
            return Some(current);
        }
    }
}

/// `/usr/lib/firmware/x` or `/lib/firmware/x` → `x`.
pub fn strip_firmware_root(path: &str) -> Option<&str> {
    let p = path.trim_start_matches("./").trim_start_matches('/');
    p.strip_prefix("usr/lib/firmware/")
        .or_else(|| p.strip_prefix("lib/firmware/"))
}

/// Removes `.` and empty components and applies `..`. A `..` above the root makes the whole
/// path unusable: the result is then the empty string.
pub fn normalize(path: &str) -> String {
    normalize_checked(path).unwrap_or_default()
}

fn normalize_checked(path: &str) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            p => out.push(p),
        }
    }
    Some(out.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn debian_like() -> LinkTable {
        // Shapes taken from firmware-nvidia-graphics 20260916: file links, a link to a
        // sibling, chained links, and directory links.
        let mut t = LinkTable::new();
        t.insert(
            "nvidia/gh100/gsp/gsp-570.144.bin",
            "../../ga102/gsp/gsp-570.144.bin",
        );
        t.insert(
            "nvidia/tu102/gsp/bootloader-570.144.bin",
            "bootloader-535.113.01.bin",
        );
        t.insert(
            "nvidia/tu116/gsp/bootloader-570.144.bin",
            "../../tu102/gsp/bootloader-570.144.bin",
        );
        t.insert("nvidia/ga104/gsp", "../ga102/gsp");
        t.insert("nvidia/tu117/gsp", "../tu116/gsp");
        t.insert("nvidia/loop/a", "b");
        t.insert("nvidia/loop/b", "a");
        t
    }

    #[test]
    fn follows_file_directory_and_chained_links() {
        let t = debian_like();
        assert_eq!(
            t.resolve("nvidia/gh100/gsp/gsp-570.144.bin").unwrap(),
            "nvidia/ga102/gsp/gsp-570.144.bin"
        );
        assert_eq!(
            t.resolve("nvidia/ga104/gsp/booter_load-570.144.bin")
                .unwrap(),
            "nvidia/ga102/gsp/booter_load-570.144.bin"
        );
        assert_eq!(
            t.resolve("nvidia/tu117/gsp/bootloader-570.144.bin")
                .unwrap(),
            "nvidia/tu102/gsp/bootloader-535.113.01.bin"
        );
        assert_eq!(
            t.resolve("nvidia/ga102/gsp/gsp-570.144.bin").unwrap(),
            "nvidia/ga102/gsp/gsp-570.144.bin"
        );
    }

    #[test]
    fn loops_and_escapes_resolve_to_none() {
        let mut t = debian_like();
        assert_eq!(t.resolve("nvidia/loop/a"), None);
        t.insert("nvidia/x", "../../../etc/passwd");
        assert_eq!(t.resolve("nvidia/x"), None);
    }

    #[test]
    fn whence_link_lines_are_read() {
        let whence = "File: nvidia/ga102/gsp/gsp-570.144.bin\n\
                      Link: nvidia/ad102/gsp/gsp-570.144.bin -> ../../ga102/gsp/gsp-570.144.bin\n\
                      Link: nvidia/ga103/gsp -> ../ga102/gsp\n";
        let t = LinkTable::from_whence(whence);
        assert_eq!(t.len(), 2);
        assert_eq!(
            t.resolve("nvidia/ga103/gsp/gsp-570.144.bin").unwrap(),
            "nvidia/ga102/gsp/gsp-570.144.bin"
        );
    }

    #[test]
    fn absolute_package_targets_are_made_relative_to_the_firmware_root() {
        let mut t = LinkTable::new();
        t.insert("nvidia/ad103/gsp", "/usr/lib/firmware/nvidia/ad102/gsp");
        t.insert("nvidia/ad104/gsp", "/etc/ad102");
        assert_eq!(
            t.resolve("nvidia/ad103/gsp/a.bin").unwrap(),
            "nvidia/ad102/gsp/a.bin"
        );
        assert_eq!(t.resolve("nvidia/ad104/gsp/a.bin"), None);
    }

    proptest::proptest! {
        /// WHENCE text comes from the network: any text gives a table, and any lookup
        /// ends (loops are cut) in a normalized path inside the tree, or `None`.
        #[test]
        fn any_whence_text_resolves_to_normalized_paths(
            lines in proptest::collection::vec("(Link: )?[a-c./]{0,12}( -> [a-c./]{0,12})?", 0..24),
            query in "[a-c./]{0,16}",
        ) {
            let table = LinkTable::from_whence(&lines.join("\n"));
            if let Some(resolved) = table.resolve(&query) {
                proptest::prop_assert!(!resolved.starts_with('/'));
                proptest::prop_assert!(!resolved.split('/').any(|p| p == ".." || p == "."));
            }
        }
    }
}
