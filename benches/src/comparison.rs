//! A whole comparison run: the scenarios in order, each one's tables on stdout and charts in
//! `--svg DIR`, every figure in `--json FILE`, and how much of the machine other processes used
//! just before and during the run (figures taken on a busy machine are noisy, and say so).

use std::time::{Duration, Instant};

use crate::error::{BenchError, Result, sys};
use crate::options::{Options, Scenario};
use crate::report::{self, Load};
use crate::{backpressure, bridge, latency, limits, small, throughput};

/// Runs the scenarios of `o`, prints the tables, writes the JSON and the charts.
pub fn run(o: &Options) -> Result<()> {
    let started = Instant::now();
    if let Some(dir) = &o.svg {
        std::fs::create_dir_all(dir).map_err(sys(format!("creating {}", dir.display())))?;
    }
    let idle_check = Load::now();
    std::thread::sleep(Duration::from_millis(200));
    let before = Load::now();
    let others_before = idle_check.others_since(&before);
    if others_before > 0.1 {
        eprintln!(
            "shmcast-bench: WARNING: other processes keep {others_before:.2} of {} cores busy; \
             figures will be noisy",
            report::cores()
        );
    }
    let mut sections = Vec::new();
    let mut limits = None;
    for &scenario in &o.scenarios {
        let section = match scenario {
            Scenario::Limits => {
                let (section, l) = limits::run(o)?;
                limits = Some(l);
                section
            }
            Scenario::Throughput => throughput::run(o, limits.as_ref())?,
            Scenario::Latency => latency::run(o, limits.as_ref())?,
            Scenario::Small => small::run(o)?,
            Scenario::Backpressure => backpressure::run(o)?,
            Scenario::Bridge => bridge::run(o)?,
        };
        println!("{}", section.text);
        if let Some(dir) = &o.svg {
            for (name, content) in &section.charts {
                let path = dir.join(name);
                std::fs::write(&path, content)
                    .map_err(sys(format!("writing {}", path.display())))?;
            }
        }
        sections.push(section);
    }
    let others_during = before.others_since(&Load::now());
    println!(
        "other processes used {others_during:.2} of {} cores on average during the run \
         ({others_before:.2} just before it)",
        report::cores()
    );
    if let Some(path) = &o.json {
        let all: Vec<serde_json::Value> = sections
            .into_iter()
            .map(|s| {
                let mut json = s.json;
                if let Some(machine) = json
                    .get_mut("params")
                    .and_then(|p| p.get_mut("machine"))
                    .and_then(|m| m.as_object_mut())
                {
                    machine.insert("other_load_cores_before".into(), others_before.into());
                    machine.insert("other_load_cores_during".into(), others_during.into());
                }
                json
            })
            .collect();
        let text = serde_json::to_string_pretty(&all).map_err(|e| BenchError::Sys {
            what: "encoding the JSON".into(),
            err: std::io::Error::other(e),
        })?;
        std::fs::write(path, text + "\n").map_err(sys(format!("writing {}", path.display())))?;
    }
    eprintln!(
        "shmcast-bench: done in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
