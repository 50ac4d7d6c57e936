//! A cycle among modules' imports: the layer tests of the library
//! (`src/lib.rs`) and of xtask (`xtask/src/layers.rs`) both ask it.

/// The first import cycle among `modules`, where `uses[i]` names the
/// modules that `modules[i]` imports (names that are not modules are
/// ignored), as the names around it with the first again at the end.
pub fn find(modules: &[&str], uses: &[Vec<String>]) -> Option<Vec<String>> {
    let edges: Vec<Vec<usize>> = uses
        .iter()
        .map(|u| {
            u.iter()
                .filter_map(|n| modules.iter().position(|m| m == n))
                .collect()
        })
        .collect();
    let mut done = vec![false; modules.len()];
    (0..modules.len()).find_map(|start| {
        let cycle = from(start, &mut Vec::new(), &mut done, &edges)?;
        Some(cycle.iter().map(|&i| modules[i].to_string()).collect())
    })
}

/// Depth-first from `at`, with the path so far: a module met again on it
/// closes a cycle, returned from its first visit back to it.
fn from(
    at: usize,
    path: &mut Vec<usize>,
    done: &mut [bool],
    edges: &[Vec<usize>],
) -> Option<Vec<usize>> {
    if let Some(start) = path.iter().position(|&p| p == at) {
        return Some([&path[start..], &[at]].concat());
    }
    if done[at] {
        return None;
    }
    path.push(at);
    for &next in &edges[at] {
        if let Some(cycle) = from(next, path, done, edges) {
            return Some(cycle);
        }
    }
    path.pop();
    done[at] = true;
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uses(lists: &[&[&str]]) -> Vec<Vec<String>> {
        lists
            .iter()
            .map(|l| l.iter().map(|s| s.to_string()).collect())
            .collect()
    }

    #[test]
    fn layers_have_no_cycle_and_a_loop_is_named() {
        let modules = ["a", "b", "c"];
        assert_eq!(
            find(&modules, &uses(&[&["b", "c"], &["c"], &["std"]])),
            None
        );
        assert_eq!(
            find(&modules, &uses(&[&["b"], &["c"], &["a"]])),
            Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
        );
    }
}
