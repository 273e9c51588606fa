//! Where a fabric comes from: a preset with parameter overrides, or a JSON file. Every front
//! end (CLI, server, bindings) loads fabrics through [`FabricSource::load`], so they all report
//! bad input the same way.

use std::path::{Path, PathBuf};

use crate::format::{read_json, FormatError};
use crate::presets::{self, PresetError};
use crate::Topology;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FabricSource {
    Preset {
        name: String,
        overrides: Vec<(String, String)>,
    },
    File(PathBuf),
}

/// Why a fabric could not be loaded. Every variant is bad input.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Preset(#[from] PresetError),
    #[error("{path}: {error}")]
    File { path: String, error: FormatError },
}

impl FabricSource {
    /// From command-line style arguments: a file, or a preset (the default one when `None`)
    /// with `key=value` settings.
    pub fn from_args(
        preset: Option<&str>,
        file: Option<&Path>,
        settings: &[String],
    ) -> Result<FabricSource, LoadError> {
        if let Some(path) = file {
            return Ok(FabricSource::File(path.to_path_buf()));
        }
        let overrides = settings
            .iter()
            .map(|s| presets::parse_assignment(s))
            .collect::<Result<_, _>>()?;
        Ok(FabricSource::Preset {
            name: preset.unwrap_or(presets::DEFAULT_PRESET).to_string(),
            overrides,
        })
    }

    pub fn load(&self) -> Result<Topology, LoadError> {
        match self {
            FabricSource::Preset { name, overrides } => Ok(presets::build(name, overrides)?),
            FabricSource::File(path) => {
                let file_err = |error| LoadError::File {
                    path: path.display().to_string(),
                    error,
                };
                let text =
                    std::fs::read_to_string(path).map_err(|e| file_err(FormatError::Io(e)))?;
                read_json(&text).map_err(file_err)
            }
        }
    }
}
