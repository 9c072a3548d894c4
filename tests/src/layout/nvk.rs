pub fn groups() -> Vec<super::Group> {
    Vec::new()
}
