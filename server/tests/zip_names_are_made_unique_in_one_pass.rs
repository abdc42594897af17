//! The names of a festival's ZIP (issue 48) are made unique in one pass: a
//! phone's share sheet names every photo alike (`image.jpg`), and 100,000 of
//! them once cost 5·10⁹ tries (each tried ` (2)`, ` (3)`… from the start).
//! The names given are the same as before: the first free number, without
//! regard to case, a name taken by an upload itself left alone.

use std::collections::HashSet;

use upload_once_server::media::zip::unique_names;

#[test]
fn a_hundred_thousand_photos_of_one_name_each_get_the_next_number() {
    let names = vec!["image.jpg"; 100_000];
    let unique = unique_names(names.iter().copied());
    assert_eq!(unique[0], "image.jpg");
    assert_eq!(unique[1], "image (2).jpg");
    assert_eq!(unique[99_999], "image (100000).jpg");
    let distinct: HashSet<String> = unique.iter().map(|n| n.to_lowercase()).collect();
    assert_eq!(distinct.len(), 100_000);
}

#[test]
fn a_number_an_upload_already_took_is_skipped_and_case_does_not_tell_names_apart() {
    let names = ["a.jpg", "a (2).jpg", "A.JPG", "a.jpg", "a (3).JPG", "a.jpg", "b", "b", "B"];
    assert_eq!(
        unique_names(names),
        ["a.jpg", "a (2).jpg", "A (3).JPG", "a (4).jpg", "a (3) (2).JPG", "a (5).jpg", "b", "b (2)", "B (3)"]
    );
}
