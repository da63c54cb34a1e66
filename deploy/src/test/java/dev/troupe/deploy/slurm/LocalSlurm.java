package dev.troupe.deploy.slurm;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A Slurm cluster of one node on this host, as Debian's {@code slurmctld}/{@code slurmd} packages
 * run it, everything under one directory: its own MUNGE daemon (Slurm's authentication) with a
 * fresh key, the controller and the node daemon on free ports, state, spool and logs. The node is
 * this machine as {@code slurmd -C} describes it, with two fake GPUs ({@code /dev/null} and {@code
 * /dev/zero} as the device files: Slurm allocates them and sets {@code CUDA_VISIBLE_DEVICES}, which
 * is all a dry run needs) and tasks bound to cores, as GPU sites configure it. The daemons run as
 * the current user (a non-root Slurm runs jobs of its own user only).
 */
final class LocalSlurm implements AutoCloseable {
  private static final Duration START = Duration.ofSeconds(60);
  private static final List<String> COMMANDS =
      List.of("munged", "slurmctld", "slurmd", "sbatch", "srun", "scancel", "scontrol", "squeue");

  private final Path dir;
  private final Map<String, Path> bin;
  private final List<Process> daemons = new ArrayList<>();
  private final String node;
  private final int cpus;

  /** A job's state and exit code as {@code scontrol show job} reports them. */
  record Job(String state, String exitCode) {}

  private LocalSlurm(Path dir, Map<String, Path> bin) throws Exception {
    this.dir = dir;
    this.bin = bin;
    // slurmd -C: this host's node line (NodeName=<short hostname> CPUs=... RealMemory=...).
    String hardware = run(List.of(bin.get("slurmd").toString(), "-C")).lines().findFirst().get();
    Matcher name = Pattern.compile("NodeName=(\\S+)").matcher(hardware);
    Matcher cpu = Pattern.compile("CPUs=(\\d+)").matcher(hardware);
    assertTrue(name.find() && cpu.find(), hardware);
    node = name.group(1);
    cpus = Integer.parseInt(cpu.group(1));
    try {
      startMunge();
      writeConfig(hardware);
      daemons.add(daemon("slurmctld", bin.get("slurmctld").toString(), "-D", "-f", conf()));
      daemons.add(daemon("slurmd", bin.get("slurmd").toString(), "-D", "-f", conf()));
      await("the node is idle", START, () -> nodeState().startsWith("idle"));
    } catch (Exception | AssertionError e) {
      stopDaemons();
      throw new AssertionError("Slurm did not start:\n" + logs(), e);
    }
  }

  /** The daemons' logs, for a failure's message. */
  private String logs() throws IOException {
    StringBuilder all = new StringBuilder();
    for (String log : List.of("munged.log", "slurmctld.log", "slurmd.log", "slurmctld.out"))
      if (Files.exists(dir.resolve(log)))
        all.append("--- ").append(log).append('\n').append(Files.readString(dir.resolve(log)));
    return all.toString();
  }

  /**
   * Starts the cluster in {@code dir}, or returns empty when Slurm is not installed (the commands
   * it lacks in {@code missing}).
   */
  static Optional<LocalSlurm> start(Path dir, List<String> missing) throws Exception {
    Map<String, Path> bin = new HashMap<>();
    for (String command : COMMANDS) {
      Optional<Path> found = find(command);
      if (found.isPresent()) bin.put(command, found.get());
      else missing.add(command);
    }
    return missing.isEmpty() ? Optional.of(new LocalSlurm(dir, bin)) : Optional.empty();
  }

  /** The node's name: what {@code SLURM_JOB_NODELIST} names and the job's nodes reach it at. */
  String node() {
    return node;
  }

  int cpus() {
    return cpus;
  }

  /**
   * Submits {@code script} with {@code sbatch} from {@code submitDir}, the environment {@code env}
   * on top of this one's (any Slurm job's variables removed), and the job's output in {@code
   * output}; returns the job id.
   */
  String sbatch(Path submitDir, Path script, Map<String, String> env, Path output, String... args)
      throws Exception {
    List<String> command = new ArrayList<>(List.of(bin.get("sbatch").toString(), "--parsable"));
    command.add("--output=" + output);
    command.addAll(List.of(args));
    command.add(script.toString());
    ProcessBuilder pb = new ProcessBuilder(command).directory(submitDir.toFile());
    pb.environment().keySet().removeIf(k -> k.startsWith("SLURM_") || k.startsWith("SBATCH_"));
    pb.environment().remove("CUDA_VISIBLE_DEVICES");
    pb.environment().putAll(env);
    pb.environment().put("SLURM_CONF", conf());
    String out = run(pb);
    return out.strip().split(";")[0];
  }

  /** {@code scancel} with {@code args} (e.g. {@code --signal=TERM}) for the job. */
  void scancel(String job, String... args) throws Exception {
    List<String> command = new ArrayList<>(List.of(bin.get("scancel").toString()));
    command.addAll(List.of(args));
    command.add(job);
    run(command);
  }

  /** The job's running steps, step name to step id ({@code <job>.<step>}). */
  Map<String, String> steps(String job) throws Exception {
    Map<String, String> steps = new HashMap<>();
    String out = run(List.of(bin.get("squeue").toString(), "-s", "-h", "-j", job, "-o", "%j %i"));
    for (String line : out.lines().map(String::strip).filter(l -> !l.isEmpty()).toList())
      steps.put(line.split(" ")[0], line.split(" ")[1]);
    return steps;
  }

  /** Waits for the job to end (its last process gone) and returns its final state. */
  Job awaitEnd(String job, Duration timeout) throws Exception {
    await("job " + job + " ends", timeout, () -> !running(job));
    return job(job);
  }

  Job job(String job) throws Exception {
    String show = run(List.of(bin.get("scontrol").toString(), "show", "job", job));
    Matcher state = Pattern.compile("JobState=(\\S+)").matcher(show);
    Matcher exit = Pattern.compile("ExitCode=(\\S+)").matcher(show);
    assertTrue(state.find() && exit.find(), show);
    return new Job(state.group(1), exit.group(1));
  }

  private boolean running(String job) throws InterruptedException {
    try {
      return !run(List.of(bin.get("squeue").toString(), "-h", "-j", job)).isBlank();
    } catch (IOException e) {
      return false; // squeue no longer knows the job
    }
  }

  /** Cancels what still runs, waits for its processes to go, then stops the daemons. */
  @Override
  public void close() throws Exception {
    try {
      String jobs = run(List.of(bin.get("squeue").toString(), "-h", "-o", "%i"));
      for (String job : jobs.lines().map(String::strip).filter(s -> !s.isEmpty()).toList()) {
        scancel(job);
        await("job " + job + " is cancelled", Duration.ofSeconds(90), () -> !running(job));
      }
    } finally {
      stopDaemons();
    }
  }

  private void stopDaemons() throws InterruptedException {
    for (int i = daemons.size() - 1; i >= 0; i--) daemons.get(i).destroy();
    for (Process p : daemons) if (!p.waitFor(30, TimeUnit.SECONDS)) p.destroyForcibly();
  }

  private String conf() {
    return dir.resolve("slurm.conf").toString();
  }

  private String nodeState() throws InterruptedException {
    try {
      return run(List.of(bin.get("scontrol").toString(), "show", "node", node))
          .lines()
          .flatMap(l -> Stream.of(l.strip().split(" ")))
          .filter(kv -> kv.startsWith("State="))
          .map(kv -> kv.substring(6).toLowerCase())
          .findFirst()
          .orElse("");
    } catch (IOException e) {
      return ""; // the controller is not up yet
    }
  }

  /**
   * munged with its own key and socket: the socket's directory must be searchable by all, the key
   * readable only by its owner (munged refuses to start otherwise).
   */
  private void startMunge() throws Exception {
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    Path key = dir.resolve("munge.key");
    byte[] bytes = new byte[128];
    new SecureRandom().nextBytes(bytes);
    Files.write(key, bytes);
    Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-------"));
    daemons.add(
        daemon(
            "munged",
            bin.get("munged").toString(),
            "--foreground",
            "--force",
            "--socket=" + dir.resolve("munge.socket"),
            "--key-file=" + key,
            "--pid-file=" + dir.resolve("munged.pid"),
            "--seed-file=" + dir.resolve("munged.seed"),
            "--log-file=" + dir.resolve("munged.log")));
    await("munged listens", START, () -> Files.exists(dir.resolve("munge.socket")));
  }

  private void writeConfig(String hardware) throws IOException {
    for (String d : List.of("state", "spool")) Files.createDirectories(dir.resolve(d));
    String user = System.getProperty("user.name");
    String conf =
        """
        ClusterName=troupetest
        SlurmctldHost=%1$s(127.0.0.1)
        SlurmctldPort=%2$d
        SlurmdPort=%3$d
        SlurmUser=%4$s
        SlurmdUser=%4$s
        AuthType=auth/munge
        CredType=cred/munge
        AuthInfo=socket=%5$s/munge.socket
        StateSaveLocation=%5$s/state
        SlurmdSpoolDir=%5$s/spool
        SlurmctldPidFile=%5$s/slurmctld.pid
        SlurmdPidFile=%5$s/slurmd.pid
        SlurmctldLogFile=%5$s/slurmctld.log
        SlurmdLogFile=%5$s/slurmd.log
        ProctrackType=proctrack/pgid
        TaskPlugin=task/affinity
        TaskPluginParam=Cores
        SelectType=select/cons_tres
        SelectTypeParameters=CR_CPU
        SchedulerType=sched/builtin
        JobAcctGatherType=jobacct_gather/none
        AccountingStorageType=accounting_storage/none
        MpiDefault=none
        ReturnToService=2
        SlurmdParameters=config_overrides
        GresTypes=gpu
        %6$s NodeAddr=127.0.0.1 Gres=gpu:2 State=UNKNOWN
        PartitionName=test Nodes=%1$s Default=YES MaxTime=INFINITE State=UP
        """
            .formatted(node, freePort(), freePort(), user, dir, hardware.strip());
    Files.writeString(dir.resolve("slurm.conf"), conf);
    Files.writeString(
        dir.resolve("gres.conf"), // read from slurm.conf's directory
        "NodeName=%1$s Name=gpu File=/dev/null\nNodeName=%1$s Name=gpu File=/dev/zero\n"
            .formatted(node));
  }

  private Process daemon(String name, String... command) throws IOException {
    return new ProcessBuilder(command)
        .redirectErrorStream(true)
        .redirectOutput(dir.resolve(name + ".out").toFile())
        .start();
  }

  /** A port free on every address now (the daemons listen on all of them). */
  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress("0.0.0.0", 0));
      return s.getLocalPort();
    }
  }

  /**
   * The first of {@code n} consecutive ports free on every address now, below Linux's ephemeral
   * range (32768 and up) so that no outgoing connection takes one meanwhile.
   */
  static int freePorts(int n) throws IOException {
    for (int attempt = 0; attempt < 100; attempt++) {
      int base = 20000 + (int) (Math.random() * 12000);
      if (freeRun(base, n)) return base;
    }
    throw new IOException("no " + n + " consecutive free ports");
  }

  private static boolean freeRun(int base, int n) {
    for (int port = base; port < base + n; port++) {
      try (ServerSocket s = new ServerSocket()) {
        s.bind(new InetSocketAddress("0.0.0.0", port));
      } catch (IOException e) {
        return false;
      }
    }
    return true;
  }

  /** The daemons in /usr/sbin are not on a normal user's PATH. */
  private static Optional<Path> find(String command) {
    List<String> path = new ArrayList<>(List.of(System.getenv("PATH").split(":")));
    path.addAll(List.of("/usr/sbin", "/sbin", "/usr/local/sbin"));
    return path.stream().map(d -> Path.of(d, command)).filter(Files::isExecutable).findFirst();
  }

  private String run(List<String> command) throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder(command);
    pb.environment().put("SLURM_CONF", conf());
    return run(pb);
  }

  /** The command's output; an IOException when it fails. */
  private static String run(ProcessBuilder pb) throws IOException, InterruptedException {
    Process p = pb.redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0)
      throw new IOException(String.join(" ", pb.command()) + " failed: " + out);
    return out;
  }

  /** A condition polled by {@link #await}. */
  interface Check {
    boolean done() throws Exception;
  }

  static void await(String what, Duration timeout, Check check) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!check.done()) {
      if (System.nanoTime() > deadline) throw new AssertionError("timed out: " + what);
      Thread.sleep(500);
    }
  }
}
