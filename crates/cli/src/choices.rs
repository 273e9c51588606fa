//! The closed sets of values that flags take, as clap's possible values: `--help` and the shell
//! completions list them, and clap refuses anything else with a message naming the flag and
//! the values it takes (exit 2). The names come from the library crates, so a new collective,
//! GPU or preset shows up here by itself. Flags whose values carry parameters (`--routing te:lp`,
//! `--placement`, `--path-selection disjoint:4`, `--hash crc16,tier2=crc32`) stay free text,
//! parsed and refused by their own code.

use clap::builder::{PossibleValue, PossibleValuesParser};
use fabricsim_collectives::bench::DATA_TYPES;
use fabricsim_collectives::{Algorithm, Collective, Fidelity, Generation, Protocol, QpMode};
use fabricsim_routing::balance::Pattern;
use fabricsim_workload::GpuSpec;

fn of(names: impl IntoIterator<Item = &'static str>) -> PossibleValuesParser {
    PossibleValuesParser::new(names.into_iter().map(PossibleValue::new))
}

/// Collectives, also as nccl-tests' binaries spell them (`all_reduce`, `allreduce`).
pub fn collectives() -> PossibleValuesParser {
    PossibleValuesParser::new(Collective::ALL.map(|c| {
        let name = c.name();
        let value = PossibleValue::new(name);
        if name.contains('-') {
            value.aliases([name.replace('-', "_"), name.replace('-', "")])
        } else {
            value
        }
    }))
}

pub fn algorithms() -> PossibleValuesParser {
    of(Algorithm::ALL.map(Algorithm::name))
}

pub fn protocols() -> PossibleValuesParser {
    of(Protocol::ALL.map(Protocol::name))
}

/// GPU generations of the collectives' hardware model (NVLink, NVLS, protocol figures).
pub fn generations() -> PossibleValuesParser {
    of(Generation::ALL.map(Generation::name))
}

/// GPUs of the compute model (peak FLOP/s, HBM).
pub fn gpus() -> PossibleValuesParser {
    of(GpuSpec::names())
}

pub fn fidelities() -> PossibleValuesParser {
    of([Fidelity::Step, Fidelity::Pipelined].map(Fidelity::name))
}

pub fn qp_modes() -> PossibleValuesParser {
    of(QpMode::ALL.map(QpMode::name))
}

/// nccl-tests' reduction operations (`-o`): all move the same bytes.
pub fn redops() -> PossibleValuesParser {
    of(["sum", "prod", "min", "max", "avg"])
}

/// nccl-tests' data types (`-d`).
pub fn data_types() -> PossibleValuesParser {
    of(DATA_TYPES.map(|(name, _)| name))
}

pub fn patterns() -> PossibleValuesParser {
    of(Pattern::NAMES)
}

pub fn nic_ports() -> PossibleValuesParser {
    of(fabricsim_routing::NicPorts::NAMES)
}

pub fn presets() -> PossibleValuesParser {
    of(fabricsim_topology::presets::all().iter().map(|p| p.name))
}

/// TE solvers; `highs` is offered always and refused with a reason by builds without it.
pub fn solvers() -> PossibleValuesParser {
    of(fabricsim_te::Solver::NAMES)
}

pub fn schedulers() -> PossibleValuesParser {
    of(fabricsim_timeline::scheduler::NAMES)
}

#[cfg(test)]
mod tests {
    use clap::{Arg, Command};

    use super::*;

    fn accepts(parser: PossibleValuesParser, value: &str) -> bool {
        let arg = Arg::new("x")
            .long("x")
            .value_parser(parser)
            .ignore_case(true);
        Command::new("t")
            .arg(arg)
            .try_get_matches_from(["t", "--x", value])
            .is_ok()
    }

    #[test]
    fn names_the_libraries_parse_are_the_ones_offered() {
        for c in Collective::ALL {
            assert!(accepts(collectives(), c.name()));
        }
        assert!(accepts(collectives(), "all_reduce"));
        assert!(accepts(collectives(), "allreduce"));
        assert!(!accepts(collectives(), "all-reduce-scatter"));
        assert!(accepts(protocols(), "simple"), "ignore_case");
        assert!(accepts(presets(), "meta-cluster"));
        assert!(accepts(schedulers(), "first-fit"));
        assert!(!accepts(redops(), "median"));
    }
}
