//! The topic contract in C: the option fields that declare (publisher) or expect (subscriber)
//! a message type, and the description of a topic's declaration that a subscriber reads.

use crate::error::Failure;
use shmcast_transport::{Contract, MessageType};
use std::ffi::{CStr, CString, c_char};

/// Contract kind: bytes of no declared type (what a publisher that declares nothing carries).
pub const SHMCAST_CONTRACT_BYTES: i32 = 0;
/// Contract kind: bytes in a named schema at a version.
pub const SHMCAST_CONTRACT_SCHEMA: i32 = 1;
/// Contract kind: one plain-data value of a named type, size and alignment per message.
pub const SHMCAST_CONTRACT_POD: i32 = 2;

/// What a topic carries, as its publisher declared it, from `shmcast_subscriber_contract`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct shmcast_contract {
    /// `SHMCAST_CONTRACT_BYTES`, `SHMCAST_CONTRACT_SCHEMA` or `SHMCAST_CONTRACT_POD`.
    pub kind: i32,
    /// The schema's version (`SHMCAST_CONTRACT_SCHEMA`), else 0.
    pub schema_version: u32,
    /// The type's or schema's name: NUL-terminated UTF-8 without control characters, 1 to 128
    /// bytes (`""` for `SHMCAST_CONTRACT_BYTES`). Owned by the subscriber: valid until
    /// `shmcast_subscriber_destroy`.
    pub name: *const c_char,
    /// The type's size in bytes, the length of every message (`SHMCAST_CONTRACT_POD`), else 0.
    pub type_size: u64,
    /// The type's alignment, a power of two up to 16 (`SHMCAST_CONTRACT_POD`), else 0.
    pub type_align: u64,
    /// The largest message the publisher may send, in bytes.
    pub max_message: u64,
}

/// A topic's contract, kept by a subscriber handle so that it can be read at any time: the C
/// description and the name it points into.
#[derive(Debug)]
pub(crate) struct Declared {
    name: CString,
    contract: shmcast_contract,
}

impl Declared {
    pub(crate) fn new(contract: &Contract) -> Declared {
        let (kind, name, schema_version, size, align) = match &contract.message {
            MessageType::Schema { name, version } => {
                (SHMCAST_CONTRACT_SCHEMA, name.as_str(), *version, 0, 0)
            }
            MessageType::Pod { name, size, align } => {
                (SHMCAST_CONTRACT_POD, name.as_str(), 0, *size, *align)
            }
            _ => (SHMCAST_CONTRACT_BYTES, "", 0, 0, 0),
        };
        // A declared name holds no control character, so no NUL.
        let name = CString::new(name).unwrap_or_default();
        Declared {
            contract: shmcast_contract {
                kind,
                schema_version,
                name: std::ptr::null(),
                type_size: size as u64,
                type_align: align as u64,
                max_message: contract.max_message as u64,
            },
            name,
        }
    }

    /// The C description; its `name` lives as long as `self`.
    pub(crate) fn describe(&self) -> shmcast_contract {
        shmcast_contract {
            name: self.name.as_ptr(),
            ..self.contract
        }
    }
}

/// One side's contract fields in an options struct, as `prefix` + `type_name` and so on in the
/// error messages.
pub(crate) struct Fields {
    pub(crate) prefix: &'static str,
    pub(crate) type_name: *const c_char,
    pub(crate) type_size: u64,
    pub(crate) type_align: u32,
    pub(crate) schema_name: *const c_char,
    pub(crate) schema_version: u32,
}

impl Fields {
    /// The message type these fields declare or expect: `None` when both names are `NULL`.
    /// Fields that belong to the other kind, or to neither, must be zero.
    ///
    /// # Safety
    ///
    /// `type_name` and `schema_name` are each null or a NUL-terminated string that stays
    /// unchanged during the call.
    pub(crate) unsafe fn message_type(&self) -> Result<Option<MessageType>, Failure> {
        let p = self.prefix;
        let unused = |set: bool, field: &str, name: &str| {
            if set {
                Err(Failure::invalid(format_args!(
                    "{p}{field} is set but {p}{name} is NULL"
                )))
            } else {
                Ok(())
            }
        };
        // SAFETY: the caller's promise for each name.
        let (type_name, schema_name) = unsafe {
            (
                name_arg(self.type_name, p, "type_name")?,
                name_arg(self.schema_name, p, "schema_name")?,
            )
        };
        match (type_name, schema_name) {
            (Some(_), Some(_)) => Err(Failure::invalid(format_args!(
                "set {p}type_name or {p}schema_name, not both"
            ))),
            (Some(name), None) => {
                unused(self.schema_version != 0, "schema_version", "schema_name")?;
                let size = usize::try_from(self.type_size).map_err(|_| {
                    Failure::invalid(format_args!("{p}type_size {} is too large", self.type_size))
                })?;
                Ok(Some(MessageType::Pod {
                    name,
                    size,
                    align: self.type_align as usize,
                }))
            }
            (None, Some(name)) => {
                unused(self.type_size != 0, "type_size", "type_name")?;
                unused(self.type_align != 0, "type_align", "type_name")?;
                Ok(Some(MessageType::schema(name, self.schema_version)))
            }
            (None, None) => {
                unused(self.type_size != 0, "type_size", "type_name")?;
                unused(self.type_align != 0, "type_align", "type_name")?;
                unused(self.schema_version != 0, "schema_version", "schema_name")?;
                Ok(None)
            }
        }
    }
}

/// A name field as a string (`None` for `NULL`).
///
/// # Safety
///
/// `ptr` is null or a NUL-terminated string that stays unchanged during the call.
unsafe fn name_arg(
    ptr: *const c_char,
    prefix: &str,
    field: &str,
) -> Result<Option<String>, Failure> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null, and the caller promises a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(ptr) };
    name.to_str()
        .map(|s| Some(s.to_owned()))
        .map_err(|_| Failure::invalid(format_args!("{prefix}{field} is not valid UTF-8")))
}
