package dev.troupe.engine.cuda;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.bytedeco.javacpp.Loader;

/**
 * Stand-ins for CUDA's libraries, built with the machine's C compiler into a folder under {@code
 * target/} (cached by content): the recording driver and cuBLAS ({@code stub/stub_driver.c}, {@code
 * stub/stub_cublas.c}; with {@code TROUPE_CUDA_STUB_COUNTS} they only count calls, {@code
 * stub/stub_counts.c}), and symbol-less {@code libcudart.so.13} and {@code libcublasLt.so.13}, each
 * with the soname and symbol version the JavaCPP bindings link against. The bindings bind lazily,
 * so a library without a function loads and only a call to that function would abort the process:
 * the empty runtime proves the runner calls no runtime (cuda*) function.
 */
public final class NativeStubs {
  private static final String RES = "/dev/troupe/engine/cuda/stub/";

  /** What the redistributable NVRTC jar (a test dependency) holds, under JavaCPP's names. */
  static final String NVRTC_RES = "/org/bytedeco/cuda/linux-x86_64/";

  static final List<String> NVRTC = List.of("libnvrtc.so.13", "libnvrtc-builtins.so.13.1");

  private NativeStubs() {}

  /** The C compiler: {@code -Dtroupe.stub.cc}, else gcc; null when there is none. */
  public static String compiler() {
    String cc = System.getProperty("troupe.stub.cc", "gcc");
    try {
      Process p = new ProcessBuilder(cc, "--version").redirectErrorStream(true).start();
      p.getInputStream().readAllBytes();
      return p.waitFor(20, TimeUnit.SECONDS) && p.exitValue() == 0 ? cc : null;
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  /** Only {@code libcuda.so.1}, exporting nothing: enough for NVRTC through the bindings. */
  static Path emptyDriver() {
    return build("empty-driver", List.of(new Lib("libcuda.so.1", null, "")));
  }

  /**
   * The recording driver and cuBLAS, the empty runtime and cuBLASLt, and links to the real NVRTC of
   * the redistributable jar (extracted into JavaCPP's cache), in one folder.
   */
  public static Path recording() {
    Path dir =
        build(
            "recording",
            List.of(
                new Lib("libcuda.so.1", null, counted("libcuda", "stub_driver.c")),
                new Lib(
                    "libcublas.so.13", "libcublas.so.13", counted("libcublas", "stub_cublas.c")),
                new Lib("libcublasLt.so.13", "libcublasLt.so.13", ""),
                new Lib("libcudart.so.13", "libcudart.so.13", "")));
    try {
      for (String lib : NVRTC) {
        File real = Loader.cacheResource(NativeStubs.class, NVRTC_RES + lib);
        if (real == null) throw new IllegalStateException(lib + " is not on the classpath");
        Path link = dir.resolve(lib);
        Files.deleteIfExists(link);
        Files.createSymbolicLink(link, real.toPath().toAbsolutePath());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return dir;
  }

  /** Whether the redistributable NVRTC (test scope) is on the classpath. */
  public static boolean nvrtcOnClasspath() {
    return NativeStubs.class.getResource(NVRTC_RES + NVRTC.get(0)) != null;
  }

  /** A library: its file name (= soname), its symbol version (null: none), its C source. */
  private record Lib(String name, String version, String source) {}

  private static Path build(String what, List<Lib> libs) {
    String cc = compiler();
    if (cc == null) throw new IllegalStateException("no C compiler");
    try {
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      for (Lib l : libs)
        md.update((l.name + l.version + l.source).getBytes(StandardCharsets.UTF_8));
      String key = HexFormat.of().formatHex(md.digest()).substring(0, 16);
      Path dir = Path.of("target", "cuda-stub", what + "-" + key).toAbsolutePath();
      Path done = dir.resolve(".built");
      if (Files.exists(done)) return dir;
      Files.createDirectories(dir);
      for (Lib l : libs) {
        Path src = dir.resolve(l.name + ".c");
        // an empty library still needs one symbol to carry its version node
        Files.writeString(src, l.source.isEmpty() ? "int troupe_stub_" + key + ";\n" : l.source);
        List<String> cmd = new ArrayList<>(List.of(cc, "-O1", "-Wall", "-shared", "-fPIC"));
        cmd.add("-Wl,-soname," + l.name);
        if (l.version != null) {
          Path map = dir.resolve(l.name + ".map");
          Files.writeString(map, l.version + " { global: *; };\n");
          cmd.add("-Wl,--version-script=" + map);
        }
        cmd.addAll(List.of("-o", dir.resolve(l.name).toString(), src.toString()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0)
          throw new IllegalStateException(String.join(" ", cmd) + " failed:\n" + out);
      }
      Files.writeString(done, "");
      return dir;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * {@code source} after the counting mode it shares ({@code stub_counts.c}), under {@code lib}.
   */
  private static String counted(String lib, String source) {
    return "#define STUB_LIBRARY \"" + lib + "\"\n" + resource("stub_counts.c") + resource(source);
  }

  private static String resource(String name) {
    try (InputStream s = NativeStubs.class.getResourceAsStream(RES + name)) {
      if (s == null) throw new IllegalStateException("missing test resource " + name);
      return new String(s.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
