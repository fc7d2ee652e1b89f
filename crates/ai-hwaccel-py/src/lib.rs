//! `ai_hwaccel._native`: the PyO3 extension under the `ai_hwaccel` Python
//! package. It only moves JSON text across: the request goes to
//! `ai_hwaccel_json::call` (the option table shared with the C ABI) with
//! the GIL released, and the answer comes back as the CLI's `--json` text.
//! The Python layer (`python/ai_hwaccel/__init__.py`) builds objects and
//! maps [`NativeError`]'s kind to its exception classes.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    _native,
    NativeError,
    PyException,
    "A failed call: args are (kind, message); kind 1 failed, 2 invalid argument, 3 not found."
);

fn raise(e: ai_hwaccel_json::Error) -> PyErr {
    NativeError::new_err((e.kind as i32, e.message))
}

/// Run a command (`detect`, `plan`, ...) on a JSON request; return the JSON
/// answer. Detection and planning run with the GIL released.
#[pyfunction]
fn call(py: Python<'_>, command: &str, request: &str) -> PyResult<String> {
    let (command, request) = (command.to_owned(), request.to_owned());
    py.allow_threads(move || ai_hwaccel_json::call(&command, &request))
        .map_err(raise)
}

/// The option keys of every command: `{command: [key, ...]}`.
#[pyfunction]
fn commands() -> Vec<(&'static str, Vec<&'static str>)> {
    ai_hwaccel_json::COMMANDS
        .iter()
        .map(|c| (c.name, c.keys.to_vec()))
        .collect()
}

/// The ids of a registry's available accelerators and of the best one.
#[pyfunction]
fn accelerator_ids(registry_json: &str) -> PyResult<(Vec<String>, Option<String>)> {
    ai_hwaccel_json::accelerator_ids(registry_json).map_err(raise)
}

/// The module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("NativeError", m.py().get_type::<NativeError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(call, m)?)?;
    m.add_function(wrap_pyfunction!(commands, m)?)?;
    m.add_function(wrap_pyfunction!(accelerator_ids, m)?)?;
    Ok(())
}
