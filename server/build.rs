//! Rebuilds the server when a migration file is added, changed or removed:
//! `sqlx::migrate!` embeds `migrations/`, but cargo only watches the files
//! it already knows of.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
