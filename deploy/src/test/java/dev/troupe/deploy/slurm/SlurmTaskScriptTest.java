package dev.troupe.deploy.slurm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.deploy.LaunchOptions;
import dev.troupe.protocol.cluster.Roles;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@code deploy/slurm/troupe-task.sh}, the per-task launcher {@code troupe.sbatch} runs through
 * srun, in its dry-run mode: the node each task would start, its flags parsed by {@link
 * LaunchOptions} itself. The first node's gateway is the seed; every worker task runs one replica
 * on its GPU ({@code cuda:$SLURM_LOCALID}, or the one GPU Slurm bound to it) with ports of its own,
 * and all agree on the model and its replica count.
 */
class SlurmTaskScriptTest {
  private static final Path SCRIPT = Path.of("slurm", "troupe-task.sh").toAbsolutePath();

  private record Task(Map<String, String> env, LaunchOptions options) {}

  private static Task run(String role, Map<String, String> extra) throws Exception {
    ProcessBuilder pb = new ProcessBuilder("bash", SCRIPT.toString(), role);
    Map<String, String> env = pb.environment();
    env.put("TROUPE_HEAD", "gpu-001");
    env.put("TROUPE_REPLICAS", "8");
    env.put("TROUPE_MODEL", "qwen3=/shared/models/Qwen3-0.6B");
    env.put("TROUPE_DATA", "/shared/troupe-data/42");
    env.put("SLURMD_NODENAME", "gpu-002");
    env.put("TROUPE_DRY_RUN", "1");
    for (String unset :
        List.of(
            "CUDA_VISIBLE_DEVICES",
            "TROUPE_DB_URL",
            "TROUPE_HOST",
            "TROUPE_PORT",
            "TROUPE_CLUSTER_PORT",
            "TROUPE_MANAGEMENT_PORT",
            "TROUPE_DEVICE")) env.remove(unset);
    env.putAll(extra);
    Process p = pb.redirectErrorStream(true).start();
    List<String> lines = new String(p.getInputStream().readAllBytes()).lines().toList();
    assertTrue(p.waitFor(30, TimeUnit.SECONDS));
    assertEquals(0, p.exitValue(), String.join("\n", lines));
    Map<String, String> set = new HashMap<>();
    List<String> args = new ArrayList<>();
    String host = env.getOrDefault("TROUPE_HOST", "gpu-002");
    String tag = role + "/" + host + "/" + env.getOrDefault("SLURM_LOCALID", "0");
    for (String line : lines) {
      String[] parts = line.split(" ", 3); // role/host/local-id env|arg value
      assertEquals(tag, parts[0], line);
      if (parts[1].equals("env"))
        set.put(
            parts[2].substring(0, parts[2].indexOf('=')),
            parts[2].substring(parts[2].indexOf('=') + 1));
      else args.add(parts[2]);
    }
    assertTrue(args.get(0).endsWith("/troupe"), "the launcher, which execs java: " + args);
    assertEquals("serve", args.get(1));
    return new Task(set, LaunchOptions.parse(args.subList(2, args.size()), null));
  }

  @Test
  void theGatewayIsTheSeedWithTheTrainerAndTheApi() throws Exception {
    LaunchOptions o = run("gateway", Map.of()).options();
    assertEquals(List.of(Roles.GATEWAY, Roles.TRAINER), o.roles());
    assertEquals(List.of(), o.seedNodes(), "the seed forms the cluster");
    assertEquals(25520, o.clusterPort());
    assertEquals(8000, o.port());
    assertEquals("gpu-002", o.host(), "Slurm's name for the node, as the workers' seed names it");
    assertEquals("0.0.0.0", o.bind());
    assertEquals(Path.of("/shared/troupe-data/42/head"), o.dataDir(), "the H2 journal");
    assertEquals(8, o.replicasOf("qwen3"));
  }

  @Test
  void eachWorkerTaskServesOneReplicaOnItsGpu() throws Exception {
    Task t0 = run("worker", Map.of("SLURM_LOCALID", "0", "CUDA_VISIBLE_DEVICES", "0,1,2,3"));
    Task t3 = run("worker", Map.of("SLURM_LOCALID", "3", "CUDA_VISIBLE_DEVICES", "0,1,2,3"));
    for (Task t : List.of(t0, t3)) {
      assertEquals(List.of(Roles.WORKER), t.options().roles());
      assertEquals(List.of("gpu-001:25520"), t.options().seedNodes(), "join the gateway");
      assertEquals(8, t.options().replicasOf("qwen3"));
      assertEquals("/shared/models/Qwen3-0.6B", t.options().models().get("qwen3"));
      assertTrue(
          t.env().get("TROUPE_JAVA_OPTS").contains("role.worker.min-nr-of-members=8"),
          "replicas are placed once every worker is in");
    }
    assertEquals("cuda:0", t0.options().device().device());
    assertEquals("cuda:3", t3.options().device().device());
    assertNotEquals(t0.options().clusterPort(), t3.options().clusterPort());
    assertNotEquals(t0.options().managementPort(), t3.options().managementPort());
    assertNotEquals(t0.options().dataDir(), t3.options().dataDir());
    // Slurm bound one GPU to the task: it is the task's device 0.
    Task bound = run("worker", Map.of("SLURM_LOCALID", "3", "CUDA_VISIBLE_DEVICES", "3"));
    assertEquals("cuda:0", bound.options().device().device());
  }

  @Test
  void withADatabaseUrlEveryNodeJournalsOnPostgres() throws Exception {
    Map<String, String> pg = Map.of("TROUPE_DB_URL", "jdbc:postgresql://db:5432/troupe");
    assertEquals("postgres", run("gateway", pg).env().get("TROUPE_DB_BACKEND"));
    assertEquals("postgres", run("worker", pg).env().get("TROUPE_DB_BACKEND"));
    assertEquals(null, run("gateway", Map.of()).env().get("TROUPE_DB_BACKEND"));
  }

  @Test
  void portsDeviceAndHostCanBeSetForTheJob() throws Exception {
    Map<String, String> set =
        Map.of(
            "TROUPE_PORT", "9100",
            "TROUPE_CLUSTER_PORT", "30000",
            "TROUPE_MANAGEMENT_PORT", "9000",
            "TROUPE_DEVICE", "cpu",
            "TROUPE_HOST", "gpu-002.cluster");
    LaunchOptions gateway = run("gateway", set).options();
    assertEquals(9100, gateway.port());
    assertEquals(30000, gateway.clusterPort());
    assertEquals(9000, gateway.managementPort());
    assertEquals("gpu-002.cluster", gateway.host());
    Map<String, String> second = new HashMap<>(set);
    second.put("SLURM_LOCALID", "1");
    LaunchOptions worker = run("worker", second).options();
    assertEquals(30002, worker.clusterPort());
    assertEquals(9002, worker.managementPort());
    assertEquals(List.of("gpu-001:30000"), worker.seedNodes());
    assertEquals("cpu", worker.device().device(), "replicas on the CPU without GPUs");
  }
}
