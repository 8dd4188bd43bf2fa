//! Crashes explored (`dynrec test --crash-points`): a reconcile is run once per write it
//! makes, stopped right after that write as if the process had died (the write landed,
//! every later request fails), then fresh reconcilers (nothing kept in memory) reconcile
//! from the API server's state until a reconcile writes nothing. The end state must equal
//! the uncrashed run's: nothing missing, orphaned, duplicated or different, no finalizer
//! left on a deleted object. The parent's deletion is explored the same way, and must leave
//! nothing behind.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use jiff::Timestamp;
use kube::api::{DeleteParams, DynamicObject};

use super::config::{ExpectConfig, StartedConfig, TRACK_LEASE};
use super::crash_state::{
    ObjectId, Snapshot, differences_from, finalizers_left, left_behind, versions,
};
use super::crash_writes::{CrashHook, Write};
use super::definition_cases::{DefinitionCase, Step};
use super::definition_run::{check_references, edit, objects, reactors, refused, request_of};
use super::definition_run::{parse_now, step_label};
use super::reactor::Reactor;
use crate::definitions::{CompiledDefinition, Inventory, root_reconciler};
use crate::object::{Gvk, ObjectKey};
use crate::reconcilers::{Config, RequestOptions, RootReconciler};
use crate::tracker::Tracker;

/// How many fresh reconciles may follow a crash before the run counts as not settling.
pub const SETTLE_ROUNDS: usize = 10;

/// Builds the reconciler under test over a config (called for every reconcile, so that
/// nothing but the API server's state survives a crash).
pub type ReconcilerFactory<'a> = dyn Fn(&Config) -> Box<dyn RootReconciler> + 'a;

/// A scenario whose crash points are explored: given objects, a request, the reconciles of
/// its phases (the first, then steps that edit the cluster first), then the parent's
/// deletion.
pub struct CrashPoints<'a> {
    api_resources: Vec<DynamicObject>,
    given: Vec<DynamicObject>,
    parent: Gvk,
    request: ObjectKey,
    reconciler: &'a ReconcilerFactory<'a>,
    phases: Vec<CrashPhase<'a>>,
}

/// One reconcile of a scenario and what comes before it.
struct CrashPhase<'a> {
    label: String,
    step: Option<&'a Step>,
    now: Option<Timestamp>,
    failures: Vec<Reactor>,
}

/// What exploring found.
#[derive(Clone, Debug, Default)]
pub struct CrashReport {
    /// How many crash points were run.
    pub crash_points: usize,
    /// The crash points (or uncrashed runs) that broke a property.
    pub findings: Vec<CrashFinding>,
}

/// A crash point that broke a property, or an uncrashed run that did.
#[derive(Clone, Debug)]
pub struct CrashFinding {
    /// `reconcile`, `steps[i] (name)` or `deletion`.
    pub phase: String,
    /// Where the process crashed; `None` for the uncrashed run.
    pub crash: Option<Crash>,
    /// What broke, one entry per property.
    pub broken: Vec<String>,
}

/// A crash point: right after write `after` of the `of` writes the uncrashed reconcile makes.
#[derive(Clone, Debug)]
pub struct Crash {
    /// The write after which the process died (1-based).
    pub after: usize,
    /// How many writes the uncrashed reconcile makes.
    pub of: usize,
    /// The writes that landed, in order (the last one is the crash point).
    pub writes: Vec<Write>,
}

impl fmt::Display for CrashFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.crash {
            None => writeln!(f, "{}: without a crash:", self.phase)?,
            Some(crash) => {
                let last = crash
                    .writes
                    .last()
                    .map(|w| format!(": {w}"))
                    .unwrap_or_default();
                writeln!(
                    f,
                    "{}: after write {} of {}{last}",
                    self.phase, crash.after, crash.of
                )?;
                writeln!(f, "  writes up to the crash:")?;
                for (i, write) in crash.writes.iter().enumerate() {
                    writeln!(f, "    {}. {write}", i + 1)?;
                }
            }
        }
        for broken in &self.broken {
            writeln!(f, "  {}", broken.replace('\n', "\n  "))?;
        }
        Ok(())
    }
}

/// Which reconcile is crashed: a phase's, or the one after the parent's deletion.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Phase(usize),
    Deletion,
}

/// One run of a scenario: the crashed (or uncrashed) reconcile's writes and the end state.
struct Run {
    writes: Vec<Write>,
    unsettled: Option<Vec<Write>>,
    end: Snapshot,
    before_deletion: Snapshot,
    /// The objects of the run's kinds before any reconcile (read for a deletion only).
    initial: Snapshot,
}

impl<'a> CrashPoints<'a> {
    /// A scenario: `given` objects, the `request` for an object of kind `parent`, the
    /// reconciler `factory`.
    pub fn new(
        given: Vec<DynamicObject>,
        parent: Gvk,
        request: ObjectKey,
        reconciler: &'a ReconcilerFactory<'a>,
    ) -> Self {
        Self {
            api_resources: Vec::new(),
            given,
            parent,
            request,
            reconciler,
            phases: vec![CrashPhase {
                label: "reconcile".into(),
                step: None,
                now: None,
                failures: Vec::new(),
            }],
        }
    }

    /// CRDs the server serves.
    pub fn api_resources(mut self, crds: Vec<DynamicObject>) -> Self {
        self.api_resources = crds;
        self
    }

    /// The first reconcile's clock (and its fresh reconciles'); default: the real time.
    pub fn now(mut self, now: Option<Timestamp>) -> Self {
        self.phases[0].now = now;
        self
    }

    /// Requests the server fails during the first reconcile (not the fresh ones after).
    pub fn failures(mut self, failures: Vec<Reactor>) -> Self {
        self.phases[0].failures = failures;
        self
    }

    /// One more phase: `step`'s edits, then a reconcile (at `now`, with `failures`).
    pub fn step(
        mut self,
        label: String,
        step: &'a Step,
        now: Option<Timestamp>,
        failures: Vec<Reactor>,
    ) -> Self {
        self.phases.push(CrashPhase {
            label,
            step: Some(step),
            now,
            failures,
        });
        self
    }

    /// Runs every crash point of every phase and of the deletion, and what each broke. The
    /// deletion is left out when an uncrashed run broke a property already.
    pub async fn explore(&self) -> Result<CrashReport, String> {
        let mut report = CrashReport::default();
        for phase in 0..self.phases.len() {
            self.explore_target(Target::Phase(phase), &mut report)
                .await?;
        }
        // The deletion starts from a settled end state: none when a reconcile did not settle.
        if report.findings.iter().all(|f| f.crash.is_some()) {
            self.explore_target(Target::Deletion, &mut report).await?;
        }
        Ok(report)
    }

    async fn explore_target(&self, target: Target, report: &mut CrashReport) -> Result<(), String> {
        let phase = match target {
            Target::Phase(i) => self.phases[i].label.clone(),
            Target::Deletion => "deletion".to_string(),
        };
        let parent = self.parent_id();
        let uncrashed = self.run(target, None).await?;
        if target == Target::Deletion && !uncrashed.before_deletion.contains(&parent) {
            return Ok(());
        }
        let mut broken = unsettled(&uncrashed);
        broken.extend(finalizers_left(&uncrashed.end));
        if target == Target::Deletion {
            let (before, initial) = (&uncrashed.before_deletion, &uncrashed.initial);
            broken.extend(left_behind(before, initial, &parent, &uncrashed.end));
        }
        if !broken.is_empty() {
            report.findings.push(CrashFinding {
                phase,
                crash: None,
                broken,
            });
            return Ok(());
        }
        let of = uncrashed.writes.len();
        if of == 0 {
            return Ok(());
        }
        let again = self.run(target, None).await?;
        // After a deletion, the objects from before it are judged by `left_behind`.
        let expected = uncrashed
            .end
            .masked_by(&again.end)
            .without(&uncrashed.before_deletion);
        for after in 1..=of {
            let crashed = self.run(target, Some(after)).await?;
            report.crash_points += 1;
            let mut broken = unsettled(&crashed);
            let before = &crashed.before_deletion;
            let compared = crashed.end.without(before);
            broken.extend(differences_from(&expected, &compared));
            broken.extend(finalizers_left(&crashed.end));
            if target == Target::Deletion {
                let initial = &crashed.initial;
                broken.extend(left_behind(before, initial, &parent, &crashed.end));
            }
            if !broken.is_empty() {
                report.findings.push(CrashFinding {
                    phase: phase.clone(),
                    crash: Some(Crash {
                        after,
                        of,
                        writes: crashed.writes,
                    }),
                    broken,
                });
            }
        }
        Ok(())
    }

    /// Runs the phases up to `target` on a fresh server, crashing the target's reconcile
    /// after write `crash` (not at all when `None`), then settles and reads the end state.
    async fn run(&self, target: Target, crash: Option<usize>) -> Result<Run, String> {
        let started = self.start().await?;
        let mut kinds: BTreeSet<Gvk> = self.given.iter().filter_map(|o| Gvk::of(o).ok()).collect();
        let last = match target {
            Target::Phase(i) => i,
            Target::Deletion => self.phases.len() - 1,
        };
        let mut writes = Vec::new();
        for (i, phase) in self.phases.iter().enumerate().take(last + 1) {
            if let Some(step) = phase.step {
                edit(started.editor(), step)
                    .await
                    .map_err(|e| refused(&phase.label, i.saturating_sub(1), &e))?;
            }
            let crashing = (target == Target::Phase(i)).then_some(crash).flatten();
            let hook = CrashHook::crashing_after(crashing);
            self.reconcile(&started, phase, &hook).await?;
            writes = hook.writes();
            kinds.extend(writes.iter().map(|w| w.gvk.clone()));
        }
        let now = &self.phases[last];
        let mut before_deletion = Snapshot::default();
        if target == Target::Deletion {
            if let Some(still) = self.settle(&started, now, &mut kinds).await? {
                return Err(format!(
                    "before the deletion, the reconciles do not settle: {}",
                    list(&still)
                ));
            }
            before_deletion = Snapshot::read(started.editor(), &kinds).await?;
            if !before_deletion.contains(&self.parent_id()) {
                return Ok(Run {
                    writes: Vec::new(),
                    unsettled: None,
                    end: before_deletion.clone(),
                    before_deletion,
                    initial: Snapshot::default(),
                });
            }
            started
                .editor()
                .delete(&self.parent, &self.request, &DeleteParams::default())
                .await
                .map_err(|e| format!("deleting the parent {}: {e}", self.parent_id()))?;
            let hook = CrashHook::crashing_after(crash);
            let deleting = CrashPhase {
                label: "deletion".into(),
                step: None,
                now: now.now,
                failures: Vec::new(),
            };
            self.reconcile(&started, &deleting, &hook).await?;
            writes = hook.writes();
            kinds.extend(writes.iter().map(|w| w.gvk.clone()));
        }
        let unsettled = self.settle(&started, now, &mut kinds).await?;
        let end = Snapshot::read(started.editor(), &kinds).await?;
        let initial = match target {
            Target::Deletion => Snapshot::read(self.start().await?.editor(), &kinds).await?,
            Target::Phase(_) => Snapshot::default(),
        };
        Ok(Run {
            writes,
            unsettled,
            end,
            before_deletion,
            initial,
        })
    }

    /// A fresh server holding the scenario's given objects.
    async fn start(&self) -> Result<StartedConfig, String> {
        let config = ExpectConfig {
            given_api_resources: self.api_resources.clone(),
            given_objects: self.given.clone(),
            ..Default::default()
        };
        config
            .start("crash-points", self.request.namespace.as_deref())
            .await
    }

    /// Fresh reconciles until one changes nothing (no object's resourceVersion moves); the
    /// last one's writes when each of [`SETTLE_ROUNDS`] changed something. The phase's `now` moves on a second each, as a restarted
    /// process reconciles later.
    async fn settle(
        &self,
        started: &StartedConfig,
        phase: &CrashPhase<'_>,
        kinds: &mut BTreeSet<Gvk>,
    ) -> Result<Option<Vec<Write>>, String> {
        let mut last = Vec::new();
        for round in 1..=SETTLE_ROUNDS {
            let fresh = CrashPhase {
                label: phase.label.clone(),
                step: None,
                now: later(phase.now, round)?,
                failures: Vec::new(),
            };
            let hook = CrashHook::crashing_after(None);
            let before = versions(started.editor(), kinds).await?;
            self.reconcile(started, &fresh, &hook).await?;
            last = hook.writes();
            kinds.extend(last.iter().map(|w| w.gvk.clone()));
            if versions(started.editor(), kinds).await? == before {
                return Ok(None);
            }
        }
        Ok(Some(last))
    }

    /// One reconcile by a reconciler built afresh (a new tracker too), through `hook`.
    async fn reconcile(
        &self,
        started: &StartedConfig,
        phase: &CrashPhase<'_>,
        hook: &CrashHook,
    ) -> Result<(), String> {
        let mut config = started.config();
        config.tracker = Arc::new(Tracker::new(TRACK_LEASE));
        let reconciler = (self.reconciler)(&config);
        let mut reactors = phase.failures.clone();
        reactors.push(hook.reactor());
        started.recording().set_reactors(reactors);
        let options = RequestOptions {
            now: phase.now,
            ..Default::default()
        };
        let reconcile = reconciler.reconcile_with(&self.request, options);
        let finished = tokio::time::timeout(super::case::DEADLINE, reconcile).await;
        started.recording().take();
        match finished {
            Ok(_) => Ok(()),
            Err(_) => Err(format!(
                "{}: the reconcile did not finish within {:?}",
                phase.label,
                super::case::DEADLINE
            )),
        }
    }

    fn parent_id(&self) -> ObjectId {
        ObjectId::new(
            &self.parent,
            self.request.namespace.as_deref(),
            &self.request.name,
        )
    }
}

/// `now` (the wall clock when `None`) plus `seconds`.
fn later(now: Option<Timestamp>, seconds: usize) -> Result<Option<Timestamp>, String> {
    let Some(now) = now else {
        return Ok(None);
    };
    let seconds = i64::try_from(seconds).map_err(|e| e.to_string())?;
    now.checked_add(jiff::SignedDuration::from_secs(seconds))
        .map(Some)
        .map_err(|e| format!("now: {e}"))
}

/// `does not settle: ...` when the fresh reconciles kept writing.
fn unsettled(run: &Run) -> Vec<String> {
    run.unsettled
        .iter()
        .map(|writes| {
            format!(
                "does not settle: {SETTLE_ROUNDS} fresh reconciles each changed something, the last wrote: {}",
                list(writes)
            )
        })
        .collect()
}

fn list(writes: &[Write]) -> String {
    let shown: Vec<String> = writes.iter().map(Write::to_string).collect();
    shown.join("; ")
}

/// Explores the crash points of a definition's case: its first reconcile, each step's,
/// and the deletion of the reconciled object after the last.
pub async fn explore_case(
    definition: &Arc<CompiledDefinition>,
    case: &DefinitionCase,
) -> Result<CrashReport, String> {
    check_references(case)?;
    let given = objects(&case.given, "given")?;
    let mut api_resources = objects(&case.api_resources, "apiResources")?;
    if let Some(crd) = &definition.crd {
        api_resources.push(super::definition_cases::object(crd)?);
    }
    let request = request_of(definition, case, &given)?;
    let factory = |config: &Config| -> Box<dyn RootReconciler> {
        Box::new(root_reconciler(definition, config, &Inventory::default()))
    };
    let parent = definition.for_kind.clone();
    let mut points = CrashPoints::new(given, parent, request, &factory)
        .api_resources(api_resources)
        .now(parse_now(case.now.as_deref())?)
        .failures(reactors(&case.failures));
    for (i, step) in case.steps.iter().enumerate() {
        let now = parse_now(step.now.as_deref()).map_err(|e| format!("steps[{i}].{e}"))?;
        points = points.step(step_label(i, step), step, now, reactors(&step.failures));
    }
    points.explore().await
}
