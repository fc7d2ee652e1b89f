//! The C functions called as C would call them: results, error codes and
//! messages, NULL handling, and several threads at once.

use std::ffi::{CStr, CString, c_char};

use ai_hwaccel_c::*;

fn run(
    f: unsafe extern "C" fn(*const c_char, *mut *mut c_char) -> AiHwaccelStatus,
    req: &str,
) -> (AiHwaccelStatus, Option<serde_json::Value>, Option<String>) {
    let req = CString::new(req).unwrap();
    let mut out: *mut c_char = std::ptr::null_mut();
    // SAFETY: valid request and out pointer.
    let status = unsafe { f(req.as_ptr(), &mut out) };
    let value = (!out.is_null()).then(|| {
        // SAFETY: a NUL-terminated string from the library.
        let s = unsafe { CStr::from_ptr(out) }.to_str().unwrap().to_string();
        // SAFETY: freed once.
        unsafe { ai_hwaccel_free(out) };
        serde_json::from_str(&s).unwrap()
    });
    let err = ai_hwaccel_last_error();
    let err = (!err.is_null())
        // SAFETY: a NUL-terminated string owned by the library.
        .then(|| unsafe { CStr::from_ptr(err) }.to_str().unwrap().to_string());
    (status, value, err)
}

#[test]
fn specs_plan_train() {
    let (s, v, e) = run(ai_hwaccel_specs, r#"{"query": "h100-sxm"}"#);
    assert_eq!(s, AiHwaccelStatus::Ok);
    assert!(e.is_none());
    assert_eq!(v.unwrap()[0]["id"], "h100-sxm");
    let (s, v, _) = run(
        ai_hwaccel_plan,
        r#"{"model": "llama-3.1-70b", "devices": "4xh100-sxm"}"#,
    );
    assert_eq!(s, AiHwaccelStatus::Ok);
    let v = v.unwrap();
    assert_eq!(v["model"], "llama-3.1-70b");
    assert_eq!(v["devices"].as_array().unwrap().len(), 4);
    let (s, v, _) = run(
        ai_hwaccel_train,
        r#"{"model": "7b", "devices": "8xa100-80gb", "zero": 3}"#,
    );
    assert_eq!(s, AiHwaccelStatus::Ok);
    assert_eq!(v.unwrap()["fits"], true);
}

#[test]
fn errors() {
    let (s, v, e) = run(ai_hwaccel_plan, r#"{"model": "7b", "batch": -1}"#);
    assert_eq!(s, AiHwaccelStatus::InvalidArgument);
    assert!(v.is_none());
    assert!(e.unwrap().contains("\"batch\""));
    let (s, _, e) = run(
        ai_hwaccel_plan,
        r#"{"model": "7b", "devices": "2xnot-a-gpu"}"#,
    );
    assert_eq!(s, AiHwaccelStatus::InvalidArgument, "{e:?}");
    let (s, _, e) = run(ai_hwaccel_detect, r#"{"root": "/nonexistent/root"}"#);
    assert_eq!(s, AiHwaccelStatus::NotFound, "{e:?}");
    let (s, _, _) = run(ai_hwaccel_plan, "not json");
    assert_eq!(s, AiHwaccelStatus::InvalidArgument);
    let (s, _, e) = run(ai_hwaccel_specs, r#"{"query": "zzzz-no-such"}"#);
    assert_eq!(s, AiHwaccelStatus::Failed);
    assert!(e.unwrap().contains("no spec entry"));
    // A success clears the last error.
    let (s, _, e) = run(ai_hwaccel_specs, "");
    assert_eq!(s, AiHwaccelStatus::Ok);
    assert!(e.is_none());
    // NULL out, NULL request, bad UTF-8, unknown command.
    // SAFETY: NULL out is checked by the library.
    let s = unsafe { ai_hwaccel_specs(std::ptr::null(), std::ptr::null_mut()) };
    assert_eq!(s, AiHwaccelStatus::InvalidArgument);
    let mut out: *mut c_char = std::ptr::null_mut();
    let bad = [0xffu8, 0xfe, 0];
    // SAFETY: NUL-terminated bytes.
    let s = unsafe { ai_hwaccel_plan(bad.as_ptr().cast(), &mut out) };
    assert_eq!(s, AiHwaccelStatus::InvalidArgument);
    assert!(out.is_null());
    // SAFETY: valid strings.
    let s = unsafe { ai_hwaccel_call(c"nope".as_ptr(), std::ptr::null(), &mut out) };
    assert_eq!(s, AiHwaccelStatus::InvalidArgument);
    // SAFETY: NULL is ignored.
    unsafe { ai_hwaccel_free(std::ptr::null_mut()) };
    // SAFETY: a static string.
    let v = unsafe { CStr::from_ptr(ai_hwaccel_version()) };
    assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
}

#[test]
fn threads_keep_their_own_errors() {
    let handles: Vec<_> = (0..8)
        .map(|i| {
            std::thread::spawn(move || {
                for _ in 0..5 {
                    if i % 2 == 0 {
                        let (s, v, e) =
                            run(ai_hwaccel_plan, r#"{"model": "8b", "devices": "2xl4"}"#);
                        assert_eq!(s, AiHwaccelStatus::Ok);
                        assert!(e.is_none());
                        assert_eq!(v.unwrap()["devices"].as_array().unwrap().len(), 2);
                    } else {
                        let (s, _, e) = run(
                            ai_hwaccel_plan,
                            &format!(r#"{{"model": "8b", "batch{i}": 1}}"#),
                        );
                        assert_eq!(s, AiHwaccelStatus::InvalidArgument);
                        assert!(e.unwrap().contains(&format!("batch{i}")));
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}
