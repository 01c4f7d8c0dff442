//! Compile-time guarantees: shapes guard accepts, and shapes it refuses with a message that
//! names what is wrong and how to fix it.

#[test]
fn accepted_shapes_compile_and_refused_ones_name_the_fix() {
    let cases = trybuild::TestCases::new();
    cases.pass("ui/*/pass/*.rs");
    cases.compile_fail("ui/*/fail/*.rs");
}
