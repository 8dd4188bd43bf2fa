//! The controllers a run can measure, named on the command line (`--engines`).

use std::fmt;

/// A controller a run measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineKind {
    /// `dynrec run` with the workload's definition
    Dynrec,
    /// The typed kube-runtime controller (`dynrec-loadtest typed-controller`)
    Typed,
}

impl EngineKind {
    /// The name the command line, the report and the output directory use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Dynrec => "dynrec",
            Self::Typed => "typed",
        }
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.name())
    }
}
