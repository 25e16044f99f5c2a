//! Whether this process was started by an MPI launcher (mpirun, mpiexec, srun), from the
//! environment the launcher sets. Read before anything else, so that a plain run never
//! touches MPI.

/// The launcher variables, in the order they are looked at: OpenMPI's mpirun, then the
/// PMI and PMIx process managers (Slurm's srun, MPICH's hydra).
pub const LAUNCHER_VARIABLES: [&str; 3] = ["OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMIX_RANK"];

/// An MPI launcher's mark on this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launcher {
    /// The variable that gave it away, e.g. `OMPI_COMM_WORLD_SIZE`.
    pub variable: &'static str,
    /// This process's rank, when the environment says it.
    pub rank: Option<u32>,
    /// The number of processes, when the environment says it.
    pub size: Option<u32>,
}

impl Launcher {
    /// Reads the launcher's variables through `var` (the process environment in
    /// [`Launcher::from_env`]); `None` when no launcher started this process.
    pub fn detect(var: impl Fn(&str) -> Option<String>) -> Option<Launcher> {
        let variable = LAUNCHER_VARIABLES.into_iter().find(|name| var(name).is_some())?;
        let number = |names: &[&str]| names.iter().find_map(|name| var(name)?.trim().parse::<u32>().ok());
        Some(Launcher {
            variable,
            rank: number(&["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"]),
            size: number(&["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]),
        })
    }

    /// The launcher of this process, from its environment.
    pub fn from_env() -> Option<Launcher> {
        Launcher::detect(|name| std::env::var(name).ok())
    }

    /// Whether this process is the first rank (or its rank is not known).
    pub fn is_first(&self) -> bool {
        self.rank.is_none_or(|r| r == 0)
    }

    /// This process as a launcher sees it: "rank 1 of 3".
    pub fn describe(&self) -> String {
        match (self.rank, self.size) {
            (Some(rank), Some(size)) => format!("rank {rank} of {size}"),
            (Some(rank), None) => format!("rank {rank}"),
            _ => "a rank".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn no_launcher_variable_means_a_plain_run() {
        assert_eq!(Launcher::detect(env(&[("PATH", "/usr/bin"), ("OMPI_MCA_foo", "1")])), None);
    }

    #[test]
    fn openmpi_pmi_and_pmix_are_each_recognised() {
        let ompi = Launcher::detect(env(&[("OMPI_COMM_WORLD_SIZE", "3"), ("OMPI_COMM_WORLD_RANK", "2")]));
        assert_eq!(ompi, Some(Launcher { variable: "OMPI_COMM_WORLD_SIZE", rank: Some(2), size: Some(3) }));
        assert_eq!(ompi.as_ref().map(Launcher::describe).as_deref(), Some("rank 2 of 3"));
        let pmi = Launcher::detect(env(&[("PMI_RANK", "0"), ("PMI_SIZE", "4")]));
        assert_eq!(pmi, Some(Launcher { variable: "PMI_RANK", rank: Some(0), size: Some(4) }));
        assert!(pmi.is_some_and(|l| l.is_first()));
        let pmix = Launcher::detect(env(&[("PMIX_RANK", "5")]));
        assert_eq!(pmix, Some(Launcher { variable: "PMIX_RANK", rank: Some(5), size: None }));
    }

    #[test]
    fn garbage_in_the_variables_is_no_rank_and_no_panic() {
        let l = Launcher::detect(env(&[("OMPI_COMM_WORLD_SIZE", "lots"), ("OMPI_COMM_WORLD_RANK", "-1")]));
        assert_eq!(l, Some(Launcher { variable: "OMPI_COMM_WORLD_SIZE", rank: None, size: None }));
        assert_eq!(l.map(|l| l.describe()).as_deref(), Some("a rank"));
    }
}
