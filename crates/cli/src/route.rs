//! `fabricsim route …`: equal-cost paths between two GPUs, and how a traffic pattern balances.

use clap::{Args, Subcommand};
use fabricsim_routing::balance::{
    group_loads, links_in_scope, pairs, selected_link_loads, GroupLoad, Pattern,
};
use fabricsim_routing::{FlowKey, HashConfig, LinkState, NicPorts, Policy, Route, Router};
use fabricsim_te::Routing;
use fabricsim_topology::{LinkId, NodeId, Topology};

use crate::failure::{input, other, CmdResult, Failure};
use crate::output::write_output;
use crate::topo::FabricArgs;
use crate::variant;

#[derive(Subcommand)]
pub enum RouteCommand {
    /// List the equal-cost paths between two GPUs and the one a flow key takes.
    Paths {
        #[command(flatten)]
        fabric: FabricArgs,
        #[command(flatten)]
        routing: RoutingArgs,
        /// Source GPU, e.g. host0/gpu0.
        #[arg(long)]
        from: String,
        /// Destination GPU.
        #[arg(long)]
        to: String,
        /// RoCE destination QP of the flow (seen by eecmp only).
        #[arg(long, default_value_t = 0)]
        qp: u32,
        /// Show at most this many paths.
        #[arg(long, default_value_t = 16)]
        limit: usize,
    },
    /// Place a traffic pattern and report per-tier load balance.
    Balance {
        #[command(flatten)]
        fabric: FabricArgs,
        #[command(flatten)]
        routing: RoutingArgs,
        /// The traffic pattern.
        #[arg(long, default_value = "permutation", value_parser = crate::choices::patterns())]
        pattern: String,
        /// QPs per connection (each routed on its own key; only eecmp tells them apart).
        #[arg(long, default_value_t = 1)]
        qps: u32,
        /// How hosts put each QP's message on a path: hashed, disjoint[:PATHS] (fewest
        /// outstanding messages among disjoint paths, as HPN) or flowlet[:GAP] (every message
        /// in flight at once: no gap, so hashed). See docs/routing.md.
        #[arg(long, default_value = "hashed", value_name = "MODE")]
        path_selection: String,
        /// Place the pattern under each of these policies, each optionally with a path
        /// selection (`ecmp,ecmp+disjoint,spray`), and print them one after another.
        #[arg(long, value_name = "POLICIES", value_delimiter = ',')]
        compare_routing: Vec<String>,
        /// Use only the first N GPUs (all-to-all is limited to 2,048).
        #[arg(long)]
        gpus: Option<usize>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// The routing policy and its hash seeds.
#[derive(Args)]
pub struct RoutingArgs {
    /// ecmp, eecmp, pin or spray (bench and run also take te, te:lp, te:mwu).
    #[arg(long, default_value = "ecmp")]
    pub routing: String,
    /// Seed of the switches' hash functions and of random patterns.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// One hash seed for every switch instead of one per switch.
    #[arg(long)]
    pub polarized: bool,
    /// The switches' hash function: ideal, crc16, crc32 or xor16, optionally per tier
    /// (`crc16,tier2=crc32`; tier 1 is the ToR). See docs/routing.md.
    #[arg(long, default_value = "ideal", value_name = "FUNC[,tierN=FUNC]")]
    pub hash: String,
    /// The header fields the switches hash, optionally per tier: `5tuple`, `5tuple+qp`, `ips`,
    /// or fields joined by `+` (sip, dip, proto, sport, dport, qp), e.g.
    /// `5tuple,tier2=5tuple+qp`. Default: the policy's (ecmp the 5-tuple, eecmp with the QP).
    #[arg(long, value_name = "FIELDS[,tierN=FIELDS]")]
    pub hash_fields: Option<String>,
    /// How a NIC with several ports puts connections on them: hash (as a switch), bond-l34
    /// (a Linux bond's layer3+4 hash) or qp-affinity (QPs given ports in turn). See
    /// docs/routing.md.
    #[arg(long, value_name = "MAPPING", value_parser = crate::choices::nic_ports(), ignore_case = true)]
    pub nic_ports: Option<String>,
}

impl RoutingArgs {
    /// A hashed policy (commands that route flows one by one, with no traffic matrix for TE).
    pub fn policy(&self) -> Result<Policy, Failure> {
        Policy::parse(&self.routing).ok_or_else(|| {
            input(anyhow::anyhow!(
                "unknown routing policy `{}`; expected one of {}{}",
                self.routing,
                Policy::NAMES.join(", "),
                if self.routing.starts_with("te") {
                    " (te needs a traffic matrix: see `fabricsim te solve`, `bench` and `run`)"
                } else {
                    ""
                }
            ))
        })
    }
    /// A hashed policy or centralized TE (`te`, `te:SOLVER`).
    pub fn routing(&self) -> Result<Routing, Failure> {
        Routing::parse(&self.routing).ok_or_else(|| {
            input(anyhow::anyhow!(
                "unknown routing `{}`; expected {}",
                self.routing,
                Routing::expected()
            ))
        })
    }

    pub fn hash(&self) -> Result<HashConfig, Failure> {
        Ok(HashConfig {
            seed: self.seed,
            polarized: self.polarized,
            functions: HashConfig::parse_functions(&self.hash)
                .map_err(|e| input(anyhow::anyhow!("--hash {e}")))?,
            fields: match &self.hash_fields {
                Some(f) => HashConfig::parse_fields(f)
                    .map_err(|e| input(anyhow::anyhow!("--hash-fields {e}")))?,
                None => [None; 3],
            },
            nic_ports: match &self.nic_ports {
                Some(m) => NicPorts::parse(m).expect("clap took one of NicPorts::NAMES"),
                None => NicPorts::Hash,
            },
        })
    }
}

fn gpu(topo: &Topology, flag: &str, name: &str) -> Result<NodeId, Failure> {
    let n = topo
        .node_by_name(name)
        .ok_or_else(|| input(anyhow::anyhow!("--{flag}: the fabric has no node `{name}`")))?;
    if topo.kind(n) != fabricsim_topology::NodeKind::Gpu {
        return Err(input(anyhow::anyhow!("--{flag}: `{name}` is not a GPU")));
    }
    Ok(n)
}

fn show_path(topo: &Topology, links: &[LinkId]) -> String {
    let mut s = String::new();
    if let Some(&first) = links.first() {
        s += topo.node_name(topo.link(first).src);
    }
    for &l in links {
        s += " > ";
        s += topo.node_name(topo.link(l).dst);
    }
    s
}

pub fn run(cmd: RouteCommand) -> CmdResult {
    match cmd {
        RouteCommand::Paths {
            fabric,
            routing,
            from,
            to,
            qp,
            limit,
        } => {
            let topo = fabric.load()?;
            let (src, dst) = (gpu(&topo, "from", &from)?, gpu(&topo, "to", &to)?);
            if src == dst {
                return Err(input(anyhow::anyhow!(
                    "--from and --to are both `{from}`; a path needs two GPUs"
                )));
            }
            let policy = routing.policy()?;
            let mut router = Router::new(&topo, policy, routing.hash()?);
            let state = LinkState::new(&topo);
            let (paths, total) = router
                .equal_cost_paths(&state, src, dst, limit)
                .map_err(input)?;
            let key = FlowKey::connection(src, dst, qp, routing.seed);
            let taken = router.route(&state, &key).map_err(input)?;
            let mut out = format!(
                "{total} equal-cost paths from {from} to {to} (showing {})\n",
                paths.len()
            );
            for (i, p) in paths.iter().enumerate() {
                out += &format!("  {:>3}  {}\n", i + 1, show_path(&topo, p));
            }
            match taken {
                Route::Path { links, latency } => {
                    let which = paths
                        .iter()
                        .position(|p| *p == links)
                        .map_or(String::new(), |i| format!(" (path {})", i + 1));
                    out += &format!(
                        "{} takes{which}, for UDP source port {} and QP {qp}, latency {latency}:\n       {}\n",
                        policy.name(),
                        key.src_port,
                        show_path(&topo, &links)
                    );
                }
                Route::Spread { links, .. } => {
                    out += &format!("spray spreads the flow evenly over all {total} paths ({} links carry a share)\n", links.len());
                }
            }
            write_output(None, |w| w.write_all(out.as_bytes())).map_err(other)
        }
        RouteCommand::Balance {
            fabric,
            routing,
            pattern,
            qps,
            path_selection,
            compare_routing,
            gpus,
            json,
        } => {
            let topo = fabric.load()?;
            let selection = variant::selection(&path_selection)?;
            let variants = variant::variants(
                &compare_routing,
                || routing.policy().map(Routing::Hashed),
                selection,
            )?;
            let mut placed = Vec::new();
            for v in &variants {
                match v.routing {
                    Routing::Hashed(policy) => placed.push((v, policy)),
                    Routing::Te(_) => {
                        return Err(input(anyhow::anyhow!(
                            "`{}`: te needs a traffic matrix (see `fabricsim te solve`, `bench` and `run`)",
                            v.name()
                        )))
                    }
                }
            }
            let pattern = Pattern::parse(&pattern).ok_or_else(|| {
                input(anyhow::anyhow!(
                    "unknown pattern `{pattern}`; expected one of {}",
                    Pattern::NAMES.join(", ")
                ))
            })?;
            if qps == 0 || qps > fabricsim_routing::MAX_QPS {
                return Err(input(anyhow::anyhow!(
                    "--qps {qps}: expected 1 to {}",
                    fabricsim_routing::MAX_QPS
                )));
            }
            let all = topo.gpus();
            let n = gpus.unwrap_or(all.len());
            if n < 2 || n > all.len() {
                return Err(input(anyhow::anyhow!(
                    "--gpus {n}: expected 2 to {}",
                    all.len()
                )));
            }
            if pattern == Pattern::AllToAll && n > 2_048 {
                return Err(input(anyhow::anyhow!(
                    "all-to-all over {n} GPUs is {} connections; use --gpus 2048 or fewer",
                    n * (n - 1)
                )));
            }
            let pairs = pairs(pattern, &all[..n], routing.seed);
            let state = LinkState::new(&topo);
            let scope = links_in_scope(&topo, &state, &pairs).map_err(input)?;
            let mut results = Vec::new();
            for (v, policy) in placed {
                let mut router = Router::new(&topo, policy, routing.hash()?);
                let loads = selected_link_loads(
                    &mut router,
                    &state,
                    &pairs,
                    qps,
                    routing.seed,
                    v.selection,
                )
                .map_err(input)?;
                results.push((v, group_loads(&topo, &loads, &scope)));
            }
            let text = if json {
                let groups = |groups: &[GroupLoad]| -> Vec<serde_json::Value> {
                    groups
                        .iter()
                        .map(|g| {
                            serde_json::json!({
                                "group": g.group, "links": g.links, "max_load": g.max_load, "mean_load": g.mean_load,
                                "max_mean_ratio": g.max_mean_ratio, "idle_fraction": g.idle_fraction,
                            })
                        })
                        .collect()
                };
                let mut v = serde_json::json!({
                    "fabric": topo.name(), "pattern": Pattern::NAMES[pattern as usize],
                    "gpus": n, "connections": pairs.len(), "qps": qps, "seed": routing.seed,
                });
                if let [(only, g)] = &results[..] {
                    v["routing"] = only.routing.name().into();
                    v["path_selection"] = only.selection.name().into();
                    v["groups"] = groups(g).into();
                } else {
                    v["variants"] = results
                        .iter()
                        .map(|(x, g)| {
                            serde_json::json!({
                                "routing": x.routing.name(), "path_selection": x.selection.name(),
                                "groups": groups(g),
                            })
                        })
                        .collect::<Vec<_>>()
                        .into();
                }
                serde_json::to_string_pretty(&v).map_err(other)? + "\n"
            } else {
                let names: Vec<String> = results.iter().map(|(v, _)| v.name()).collect();
                let mut t = format!(
                    "{} connections ({}, {n} GPUs) on {} under {}, {qps} QP{} each\n",
                    pairs.len(),
                    Pattern::NAMES[pattern as usize],
                    topo.name(),
                    names.join(", "),
                    if qps == 1 { "" } else { "s" }
                );
                for ((_, groups), name) in results.iter().zip(&names) {
                    t += "\n";
                    if results.len() > 1 {
                        t += &format!("{name}\n");
                    }
                    t += &format!(
                        "  {:<14} {:>7} {:>9} {:>9} {:>9} {:>6}\n",
                        "links", "count", "max", "mean", "max/mean", "idle"
                    );
                    for g in groups {
                        t += &format!(
                            "  {:<14} {:>7} {:>9.2} {:>9.2} {:>9.2} {:>5.1}%\n",
                            g.group,
                            g.links,
                            g.max_load,
                            g.mean_load,
                            g.max_mean_ratio,
                            100.0 * g.idle_fraction
                        );
                    }
                }
                t += "\n  load = connections per link (a QP counts 1/qps, a sprayed connection its share), over the\n  links on some equal-cost path of the pattern\n";
                t
            };
            write_output(None, |w| w.write_all(text.as_bytes())).map_err(other)
        }
    }
}
