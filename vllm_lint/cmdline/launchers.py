"""Programs that start another command (``nohup``, ``srun``, ``uv run``, ``docker exec``, ...): where, in
the words after them, the command they start begins.

Each launcher is data: the options that take a value (the next word, or ``--opt=value``, or a short
option's attached ``-pVALUE``), the few that take two, the operands that come before the command
(``timeout DURATION``, ``gosu USER``), whether the command follows only a ``--``, and whether the
command is a Python script (``torchrun``, ``accelerate launch``: with ``-m`` a module, run as
``python -m``). The arities are read from each tool's own manual or ``--help``, named beside its row.
An option a row does not list is taken as a switch: a wrong guess there makes the reader miss a launch
(its value taken for the program), never invent one.
"""

from __future__ import annotations

from dataclasses import dataclass

from vllm_lint.cmdline.shell import Environment, Word


@dataclass(frozen=True, slots=True)
class Launcher:
    """How a command that runs another one (timeout, mpirun, kubectl exec) takes its options."""
    values: frozenset[str] = frozenset()  # options whose value is the next word (unless attached)
    pairs: frozenset[str] = frozenset()  # options that take the next two words (mpirun --mca KEY VALUE)
    operands: int = 0  # words between the options and the command (timeout's DURATION)
    after_dashdash: bool = False  # the command is only what follows ``--`` (kubectl exec POD -- CMD)
    python: bool = False  # the command is a Python script, or with a ``modules`` option a module
    modules: frozenset[str] = frozenset()  # options that make the script a module (``-m``)
    programs: frozenset[str] = frozenset()  # options that make the script a program (``--no-python``)
    underscores: bool = False  # argparse-style names where ``_`` and ``-`` are the same (torchrun, accelerate)
    foreign_env: bool = False  # the command runs in an environment this file does not set (a running container)


def _options(*names: str) -> frozenset[str]:
    return frozenset(names)


_APPTAINER_VALUES = _options(
    "-B", "--bind", "--env", "--env-file", "-H", "--home", "-W", "--workdir", "--pwd", "-o", "--overlay",
    "--security", "--network", "--network-args", "--hostname", "--dns", "--app", "-S", "--scratch", "--mount",
    "--fusemount", "--add-caps", "--drop-caps", "--apply-cgroups", "--cpus", "--memory", "--memory-swap",
    "--cpu-shares", "--cpuset-cpus", "--pids-limit", "--blkio-weight", "--no-mount", "--pem-path",
)


# name (the program, and the subcommand words that must follow it) -> its options
# (a table, one row per launcher: kept as written)
# fmt: off
LAUNCHERS: dict[tuple[str, ...], Launcher] = {
    # bash(1) builtins: exec [-cl] [-a name]; command [-pVv]; time [-p] (a reserved word)
    ("exec",): Launcher(values=_options("-a")),
    ("command",): Launcher(),
    ("time",): Launcher(values=_options("-f", "--format", "-o", "--output")),  # GNU time(1), /usr/bin/time
    # coreutils (``--help`` of coreutils 9): nohup takes no options; timeout [-k D] [-s SIG] DURATION CMD;
    # nice [-n N]; stdbuf -i/-o/-e MODE; env [-u NAME] [-C DIR] [-S STRING] (assignments follow: read as such)
    ("nohup",): Launcher(),
    ("timeout",): Launcher(values=_options("-k", "--kill-after", "-s", "--signal"), operands=1),
    ("nice",): Launcher(values=_options("-n", "--adjustment")),
    ("stdbuf",): Launcher(values=_options("-i", "--input", "-o", "--output", "-e", "--error")),
    ("env",): Launcher(values=_options("-u", "--unset", "-C", "--chdir", "-S", "--split-string")),
    # util-linux (``--help`` of util-linux 2.39): setsid [-cfw]; taskset [-ac] MASK|LIST CMD;
    # chrt [-bdfior] [-T/-P/-D NS] PRIORITY CMD; ionice [-c CLASS] [-n LEVEL] [-t] CMD;
    # flock [-sxun] [-w SECS] [-E CODE] FILE CMD; runuser [-u USER] [-g GROUP] [-G GROUP] -- CMD
    ("setsid",): Launcher(),
    ("taskset",): Launcher(operands=1),
    ("chrt",): Launcher(values=_options("-T", "--sched-runtime", "-P", "--sched-period", "-D", "--sched-deadline"), operands=1),
    ("ionice",): Launcher(values=_options("-c", "--class", "-n", "--classdata")),
    ("flock",): Launcher(values=_options("-w", "--timeout", "--wait", "-E", "--conflict-exit-code"), operands=1),
    ("runuser",): Launcher(values=_options("-u", "--user", "-g", "--group", "-G", "--supp-group")),
    # numactl(8): --interleave/-i, --preferred/-p, --membind/-m, --cpunodebind/-N, --physcpubind/-C NODES,
    # --preferred-many/-P; switches --all/-a, --localalloc/-l, --balancing/-b
    ("numactl",): Launcher(values=_options(
        "-i", "--interleave", "-p", "--preferred", "-P", "--preferred-many", "-m", "--membind", "-N",
        "--cpunodebind", "-C", "--physcpubind",
    )),
    # sudo(8) (sudo.ws): -u USER, -g GROUP, -C NUM, -D DIR, -h HOST, -p PROMPT, -r ROLE, -t TYPE, -T TIMEOUT,
    # -U USER; --preserve-env takes its list only as --preserve-env=LIST
    ("sudo",): Launcher(values=_options(
        "-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-h", "--host", "-p", "--prompt",
        "-r", "--role", "-t", "--type", "-T", "--command-timeout", "-U", "--other-user",
    )),
    # su-exec / gosu (their READMEs): USER[:GROUP] CMD; tini [-s] [-p SIG] [-e CODE] [--] CMD;
    # dumb-init [-c] [-r s:r] CMD
    ("gosu",): Launcher(operands=1),
    ("su-exec",): Launcher(operands=1),
    ("tini",): Launcher(values=_options("-p", "-e")),
    ("dumb-init",): Launcher(values=_options("-r", "--rewrite")),
    # systemd-run(1) (``--help`` of systemd 252): options with =VALUE below; --scope, --user, --pty,
    # --wait, -d, -q, -G, -r, -t, -P, -S are switches
    ("systemd-run",): Launcher(values=_options(
        "-H", "--host", "-M", "--machine", "-u", "--unit", "-p", "--property", "--description", "--slice",
        "--service-type", "--uid", "--gid", "--nice", "--working-directory", "-E", "--setenv", "--path-property",
        "--socket-property", "--timer-property", "--on-active", "--on-boot", "--on-startup", "--on-unit-active",
        "--on-unit-inactive", "--on-calendar",
    )),
    # srun(1) (slurm.schedmd.com/srun.html): the options written ``--name=<value>`` (a required value);
    # ``--exclusive[=...]``, ``--kill-on-bad-exit[=...]`` take theirs only after ``=``
    ("srun",): Launcher(values=_options(
        "-A", "--account", "-c", "--cpus-per-task", "-C", "--constraint", "-D", "--chdir", "-d", "--dependency",
        "-e", "--error", "-G", "--gpus", "-i", "--input", "-J", "--job-name", "-L", "--licenses", "-m",
        "--distribution", "-n", "--ntasks", "-N", "--nodes", "-o", "--output", "-p", "--partition", "-q", "--qos",
        "-r", "--relative", "-t", "--time", "-T", "--threads", "-w", "--nodelist", "-x", "--exclude", "-W", "--wait",
        "--gres", "--gpus-per-node", "--gpus-per-task", "--gpus-per-socket", "--cpus-per-gpu", "--mem",
        "--mem-per-cpu", "--mem-per-gpu", "--ntasks-per-node", "--ntasks-per-gpu", "--cpu-bind", "--gpu-bind",
        "--mpi", "--export", "--reservation", "--jobid", "--het-group", "--container-image", "--container-mounts",
        "--container-name", "--container-workdir", "--container-env", "--cluster", "-M", "--clusters", "--comment",
        "--begin", "--deadline", "--time-min", "--nice", "--mail-type", "--mail-user", "--network", "--signal",
        "--switches", "--tmp", "--uid", "--gid", "--prolog", "--epilog", "--task-prolog", "--task-epilog",
        "--mem-bind", "--sockets-per-node", "--cores-per-socket", "--threads-per-core", "--ntasks-per-core",
        "--ntasks-per-socket", "--cpu-freq", "--profile",
    )),
    # mpirun(1) of Open MPI: -np/-n N, -H/--host HOSTS, -x VAR, --hostfile FILE, --map-by, --bind-to, --rank-by
    # OBJ, -npernode N, -wdir DIR, --prefix DIR; --mca KEY VALUE (two words)
    ("mpirun",): Launcher(values=_options(
        "-np", "-n", "-c", "--np", "-H", "-host", "--host", "-x", "-hostfile", "--hostfile", "-machinefile",
        "--machinefile", "--map-by", "-map-by", "--bind-to", "-bind-to", "--rank-by", "-rank-by", "-npernode",
        "--npernode", "-N", "-wdir", "--wdir", "-wd", "--prefix", "-prefix", "--output-filename",
    ), pairs=_options("--mca", "-mca", "--gmca", "-gmca")),
    # torchrun (PyTorch's torch.distributed.run, argparse): the options below take a value; then the script
    # (with -m/--module a module, with --no-python a program)
    ("torchrun",): Launcher(values=_options(
        "--nnodes", "--nproc-per-node", "--rdzv-backend", "--rdzv-endpoint", "--rdzv-id", "--rdzv-conf",
        "--max-restarts", "--monitor-interval", "--start-method", "--role", "--node-rank", "--master-addr",
        "--master-port", "--local-addr", "--log-dir", "-r", "--redirects", "-t", "--tee", "--local-ranks-filter",
        "--logs-specs",
    ), python=True, modules=_options("-m", "--module"), programs=_options("--no-python"), underscores=True),
    # accelerate launch (Hugging Face accelerate's ``accelerate launch --help``): switches below, every other
    # option takes a value; -m/--module, --no-python as torchrun's
    ("accelerate", "launch"): Launcher(values=_options(
        "--config-file", "--mixed-precision", "--num-processes", "--num-machines", "--num-cpu-threads-per-process",
        "--dynamo-backend", "--dynamo-mode", "--gpu-ids", "--machine-rank", "--main-process-ip",
        "--main-process-port", "--rdzv-backend", "--rdzv-conf", "--max-restarts", "--monitor-interval",
        "--same-network", "--deepspeed-config-file", "--zero-stage", "--offload-optimizer-device",
        "--offload-param-device", "--gradient-accumulation-steps", "--gradient-clipping", "--fsdp-sharding-strategy",
        "--fsdp-auto-wrap-policy", "--fsdp-transformer-layer-cls-to-wrap", "--fsdp-backward-prefetch",
        "--fsdp-state-dict-type", "--tpu-vm", "--env", "--log-dir", "-t", "--tee", "--role",
    ), python=True, modules=_options("-m", "--module"), programs=_options("--no-python"), underscores=True),
    # uv run (docs.astral.sh/uv/reference/cli/#uv-run): options with <VALUE>; ``-m`` runs python -m
    ("uv", "run"): Launcher(values=_options(
        "--with", "--with-editable", "--with-requirements", "-p", "--python", "--package", "--extra", "--group",
        "--no-group", "--only-group", "--project", "--directory", "--env-file", "--index", "--default-index", "-i",
        "--index-url", "--extra-index-url", "-f", "--find-links", "--no-extra", "--config-file", "--cache-dir",
        "--python-platform", "--resolution", "--prerelease", "--exclude-newer", "--keyring-provider",
        "--index-strategy", "--link-mode", "-P", "--upgrade-package", "--reinstall-package", "--color",
        "--refresh-package", "--no-binary-package", "--no-build-package", "--allow-insecure-host",
    )),
    # uvx / uv tool run (docs.astral.sh/uv/reference/cli/#uv-tool-run): --from PKG, --with, -p/--python
    ("uvx",): Launcher(values=_options(
        "--from", "--with", "--with-editable", "--with-requirements", "-p", "--python", "--index", "--index-url",
        "--extra-index-url", "-f", "--find-links",
    )),
    ("uv", "tool", "run"): Launcher(values=_options(
        "--from", "--with", "--with-editable", "--with-requirements", "-p", "--python", "--index", "--index-url",
        "--extra-index-url",
    )),
    # poetry run, pipenv run, pdm run, hatch run, pipx run: the command follows (pipx: --spec PKG)
    ("poetry", "run"): Launcher(values=_options("-C", "--directory", "-P", "--project")),
    ("pipenv", "run"): Launcher(),
    ("pdm", "run"): Launcher(values=_options("-p", "--project", "-v", "--venv")),
    ("hatch", "run"): Launcher(),
    ("pipx", "run"): Launcher(values=_options("--spec", "--python", "--index-url", "--pip-args")),
    # conda run (docs.conda.io/projects/conda/en/stable/commands/run.html): -n/--name ENV, -p/--prefix PATH,
    # --cwd DIR; micromamba/mamba run: also -r/--root-prefix, -a/--attach, -e/--env, --label
    ("conda", "run"): Launcher(values=_options("-n", "--name", "-p", "--prefix", "--cwd")),
    ("mamba", "run"): Launcher(values=_options("-n", "--name", "-p", "--prefix", "--cwd")),
    ("micromamba", "run"): Launcher(values=_options(
        "-n", "--name", "-p", "--prefix", "-r", "--root-prefix", "--cwd", "-a", "--attach", "-e", "--env", "--label",
    )),
    # pixi run (pixi.sh/latest/reference/cli/pixi/run): -e/--environment ENV, --manifest-path PATH
    ("pixi", "run"): Launcher(values=_options("-e", "--environment", "--manifest-path")),
    # docker exec (docs.docker.com/reference/cli/docker/container/exec): -e/--env, --env-file, -u/--user,
    # -w/--workdir, --detach-keys take values; then CONTAINER, then the command; it runs in the container's
    # environment, which this file does not set
    ("docker", "exec"): Launcher(values=_options(
        "-e", "--env", "--env-file", "-u", "--user", "-w", "--workdir", "--detach-keys",
    ), operands=1, foreign_env=True),
    ("podman", "exec"): Launcher(values=_options(
        "-e", "--env", "--env-file", "-u", "--user", "-w", "--workdir", "--detach-keys",
    ), operands=1, foreign_env=True),
    # kubectl exec (kubernetes.io/docs/reference/kubectl/generated/kubectl_exec): POD [-c CONTAINER] -- CMD
    ("kubectl", "exec"): Launcher(after_dashdash=True, foreign_env=True),
    # apptainer/singularity exec (``apptainer exec --help``, Apptainer 1.3): options, IMAGE, then the command,
    # run in the image with the host's environment (unless --cleanenv); the options below take a value
    ("apptainer", "exec"): Launcher(values=_APPTAINER_VALUES, operands=1),
    ("singularity", "exec"): Launcher(values=_APPTAINER_VALUES, operands=1),
    # ray job submit (docs.ray.io, Ray Jobs CLI): options, then ``--`` and the entrypoint, run on the cluster
    ("ray", "job", "submit"): Launcher(after_dashdash=True, foreign_env=True),
}
# fmt: on
_FIRST_WORDS = frozenset(name[0] for name in LAUNCHERS)


@dataclass(frozen=True, slots=True)
class Peeled:
    """Where the command a launcher starts begins (``start``), and how to read it."""

    start: int
    launcher: Launcher
    module: Word | None = None  # a Python launcher's ``-m``: the command is ``python -m SCRIPT ...``
    script: bool = False  # a Python launcher's script (no ``-m``, no ``--no-python``): no command line to read


def program_name(word: Word) -> str:
    """The program a word names: ``python`` of ``/opt/venv/bin/python``, and of ``"$VENV/bin/python"``
    (a directory through a variable, the program written out)."""
    if word.value is not None:
        return word.value.rsplit("/", 1)[-1]
    last = word.parts[-1] if word.parts else None
    if last is not None and last[0] == "lit" and "/" in last[1]:
        return last[1].rsplit("/", 1)[-1]
    return ""


def _text(word: Word, env: Environment) -> str:
    value = env.expand(word).value
    return value if value is not None else word.raw


def _normalised(option: str, launcher: Launcher) -> str:
    name = option.partition("=")[0]
    if launcher.underscores and name.startswith("--"):
        return "--" + name[2:].replace("_", "-")
    return name


def peel(words: list[Word], index: int, env: Environment) -> Peeled | None:
    """When ``words[index]`` starts a launcher, where the command it starts begins; None otherwise, or
    when the launcher's words do not say (a value left unknown, no ``--`` where one is needed)."""
    program = program_name(words[index])
    if program not in _FIRST_WORDS:
        return None
    for name, launcher in LAUNCHERS.items():
        end = index + len(name)
        if (
            name[0] == program
            and end <= len(words)
            and all(_text(w, env) == n for w, n in zip(words[index + 1 : end], name[1:]))
        ):
            return _command_start(words, end, launcher, env)
    return None


def _command_start(words: list[Word], i: int, launcher: Launcher, env: Environment) -> Peeled | None:
    module: Word | None = None
    program = False
    while i < len(words):
        text = _text(words[i], env)
        if text == "--":
            i += 1
            break
        if launcher.after_dashdash:
            i += 1
            continue
        if not text.startswith("-") or text == "-":
            break
        name = _normalised(text, launcher)
        if name in launcher.modules:
            module = words[i]
            i += 1
            continue
        if name in launcher.programs:
            program = True
            i += 1
            continue
        i += 1 + _values_taken(text, name, launcher)
    else:
        if launcher.after_dashdash:
            return None
    i += launcher.operands
    if i >= len(words):
        return None
    return Peeled(i, launcher, module, launcher.python and module is None and not program)


def _values_taken(text: str, name: str, launcher: Launcher) -> int:
    """How many words after the option ``text`` are its values."""
    if "=" in text and text.startswith("--"):
        return 0
    if name in launcher.pairs:
        return 2
    if name in launcher.values:
        return 0 if "=" in text else 1
    if text.startswith("--") or len(text) <= 2:
        return 0
    # a bundle of short options (``-it``, ``-N1``, ``-pMemoryMax=1G``): the first that takes a value takes the rest
    for position, letter in enumerate(text[1:], start=1):
        if f"-{letter}" in launcher.values:
            return 1 if position == len(text) - 1 else 0
    return 0
