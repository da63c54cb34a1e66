package dev.troupe.deploy;

import com.typesafe.config.ConfigFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A worker node in its own JVM, for the kill -9 migration test: joins the cluster at {@code
 * args[1]} with the model flags that follow {@code args[2]}, keeps its data in {@code args[0]},
 * writes its cluster port to {@code args[2]} once up, and runs until killed.
 */
public final class WorkerNodeMain {
  private WorkerNodeMain() {}

  public static void main(String[] args) throws Exception {
    List<String> flags =
        new java.util.ArrayList<>(
            List.of(
                "--roles",
                "worker",
                "--cluster-port",
                "0",
                "--management-port",
                "-1",
                "--api-key",
                "sk-kill",
                "--data-dir",
                args[0],
                "--seed-nodes",
                args[1]));
    flags.addAll(List.of(args).subList(3, args.length));
    TroupeNode node =
        TroupeNode.start(
            LaunchOptions.parse(flags, null),
            ConfigFactory.parseString(MigrationKillNineTest.CLUSTER),
            key -> {});
    Path ready = Path.of(args[2]);
    Path tmp = ready.resolveSibling(ready.getFileName() + ".tmp");
    Files.writeString(
        tmp, Integer.toString(node.address().getPort().get()), StandardCharsets.UTF_8);
    Files.move(tmp, ready);
    Thread.currentThread().join();
  }
}
