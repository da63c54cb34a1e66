package dev.troupe.engine.cuda;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * Where this machine's CUDA 13 libraries are: the driver ({@code libcuda.so.1}) and {@code
 * libcudart.so.13}, {@code libcublas.so.13}, {@code libcublasLt.so.13}, {@code libnvrtc.so.13}.
 * Searched, in order: {@code LD_LIBRARY_PATH}; {@code $CUDA_HOME} and {@code $CUDA_PATH}; the
 * {@code ld.so} cache; {@code /usr/local/cuda}, then every {@code /usr/local/cuda-*}, newest first;
 * the driver's usual folders. Then, for what is still missing, the folders pip's CUDA 13 wheels
 * install into ({@code site-packages/nvidia/cu13/lib}: on machines where PyTorch brought CUDA, the
 * toolkit folder may hold the runtime but no cuBLAS or NVRTC): under {@code $VIRTUAL_ENV}, {@code
 * $CONDA_PREFIX}, {@code /opt/*} (virtual environments), {@code /usr/local/lib/python3*}, the
 * user's {@code ~/.local}, and last the site-packages the machine's {@code python3} reports.
 */
final class CudaLibraries {
  /** Libraries the runner needs, in load order, with what provides them. */
  static final Map<String, String> LIBRARIES = libraries();

  /**
   * What pip's CUDA 13 wheels (nvidia-cublas, nvidia-cuda-nvrtc, ...) install under site-packages.
   */
  static final String PIP_LIB = "nvidia/cu13/lib";

  private static Map<String, String> libraries() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("libcuda.so.1", "the NVIDIA driver");
    m.put("libcudart.so.13", "the CUDA 13 runtime");
    m.put("libcublasLt.so.13", "cuBLASLt 13");
    m.put("libcublas.so.13", "cuBLAS 13");
    m.put("libnvrtc.so.13", "NVRTC 13");
    return java.util.Collections.unmodifiableMap(m);
  }

  /**
   * What a search found: each library's folder ({@code found}, missing ones absent) and the folders
   * looked in.
   */
  record Found(Map<String, Path> found, List<Path> searched) {
    Found {
      found = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(found));
      searched = List.copyOf(searched);
    }

    boolean complete() {
      return found.size() == LIBRARIES.size();
    }

    /** Which library came from which folder, one line. */
    String describe() {
      Map<Path, List<String>> byDir = new LinkedHashMap<>();
      found.forEach((lib, dir) -> byDir.computeIfAbsent(dir, d -> new ArrayList<>()).add(lib));
      return byDir.entrySet().stream()
          .map(e -> String.join(", ", e.getValue()) + " from " + e.getKey())
          .collect(Collectors.joining("; "));
    }

    /** The one-line message naming what is missing and where it was looked for; null if none. */
    String missing() {
      List<String> miss = new ArrayList<>();
      LIBRARIES.forEach(
          (lib, what) -> {
            if (!found.containsKey(lib)) miss.add(lib + " (" + what + ")");
          });
      if (miss.isEmpty()) return null;
      List<Path> existing = searched.stream().filter(Files::isDirectory).toList();
      return "no usable GPU: "
          + String.join(", ", miss)
          + " not found in LD_LIBRARY_PATH, $CUDA_HOME, the ld.so cache, /usr/local/cuda*, or pip's "
          + PIP_LIB
          + " (searched "
          + (existing.isEmpty() ? "no existing folder" : existing.toString())
          + (searched.size() > existing.size()
              ? " and " + (searched.size() - existing.size()) + " absent ones"
              : "")
          + ")"
          + (found.containsKey("libcuda.so.1")
              ? "; install the CUDA 13 toolkit (or its runtime, cuBLAS and NVRTC libraries)"
              : "; this machine has no NVIDIA driver");
    }
  }

  /** This machine: its environment, {@code /}, {@code ldconfig -p} and {@code python3}. */
  static Found search() {
    return search(System::getenv, Path.of("/"), CudaLibraries::ldCache, CudaLibraries::python);
  }

  /**
   * Searches with {@code env} for environment variables, absolute fixed folders taken under {@code
   * root}, {@code ldCache} the folders of the ld.so cache's entries and {@code python} the
   * interpreter's site-packages (asked only when the other folders lack a library).
   */
  static Found search(
      Function<String, String> env,
      Path root,
      Supplier<List<Path>> ldCache,
      Supplier<List<Path>> python) {
    Set<Path> dirs = new LinkedHashSet<>();
    String ld = env.apply("LD_LIBRARY_PATH");
    if (ld != null) for (String s : ld.split(":")) if (!s.isBlank()) dirs.add(Path.of(s));
    for (String v : List.of("CUDA_HOME", "CUDA_PATH")) {
      String h = env.apply(v);
      if (h != null && !h.isBlank()) {
        dirs.add(Path.of(h, "lib64"));
        dirs.add(Path.of(h, "targets", "x86_64-linux", "lib"));
      }
    }
    dirs.addAll(ldCache.get());
    List<Path> toolkits = new ArrayList<>(List.of(root.resolve("usr/local/cuda")));
    toolkits.addAll(
        glob(root, "usr/local/cuda-*").stream()
            .sorted((a, b) -> compare(version(b), version(a)))
            .toList());
    for (Path t : toolkits) {
      dirs.add(t.resolve("lib64"));
      dirs.add(t.resolve("targets/x86_64-linux/lib"));
    }
    for (String d : List.of("usr/local/nvidia/lib64", "usr/lib/x86_64-linux-gnu", "usr/lib64"))
      dirs.add(root.resolve(d));
    Map<String, Path> found = locate(dirs);
    if (found.size() < LIBRARIES.size()) {
      for (String prefix : List.of("VIRTUAL_ENV", "CONDA_PREFIX")) {
        String p = env.apply(prefix);
        if (p != null && !p.isBlank())
          dirs.addAll(glob(Path.of(p), "lib/python3*/site-packages/" + PIP_LIB));
      }
      String home = env.apply("HOME");
      List<String> patterns =
          new ArrayList<>(
              List.of(
                  "opt/*/.venv/lib/python3*/site-packages/",
                  "opt/*/venv/lib/python3*/site-packages/",
                  "opt/*/lib/python3*/site-packages/",
                  "usr/local/lib/python3*/dist-packages/",
                  "usr/local/lib/python3*/site-packages/",
                  "usr/lib/python3/dist-packages/"));
      if (home != null && home.startsWith("/"))
        patterns.add(home.substring(1) + "/.local/lib/python3*/site-packages/");
      for (String p : patterns) dirs.addAll(glob(root, p + PIP_LIB));
      found = locate(dirs);
    }
    if (found.size() < LIBRARIES.size()) {
      for (Path site : python.get()) dirs.add(site.resolve(PIP_LIB));
      found = locate(dirs);
    }
    return new Found(found, new ArrayList<>(dirs));
  }

  /** Each library's first folder in {@code dirs} that holds it. */
  static Map<String, Path> locate(Iterable<Path> dirs) {
    Map<String, Path> found = new LinkedHashMap<>();
    for (String lib : LIBRARIES.keySet())
      for (Path d : dirs)
        if (Files.exists(d.resolve(lib))) {
          found.put(lib, d);
          break;
        }
    return found;
  }

  /**
   * The folders matching {@code pattern} (relative, '/'-separated, '*' within a name) under {@code
   * base}, sorted.
   */
  static List<Path> glob(Path base, String pattern) {
    List<Path> level = List.of(base);
    for (String part : pattern.split("/")) {
      if (part.isEmpty()) continue;
      List<Path> next = new ArrayList<>();
      for (Path dir : level) {
        if (!part.contains("*")) {
          if (Files.isDirectory(dir.resolve(part))) next.add(dir.resolve(part));
          continue;
        }
        try (DirectoryStream<Path> s = Files.newDirectoryStream(dir, part)) {
          for (Path p : s) if (Files.isDirectory(p)) next.add(p);
        } catch (IOException e) {
          // unreadable or absent: nothing there
        }
      }
      next.sort(null);
      level = next;
    }
    return level;
  }

  /** "cuda-13.1" → [13, 1], for newest-first order; names without a version sort first. */
  private static List<Integer> version(Path toolkit) {
    String v = toolkit.getFileName().toString().replaceFirst("^cuda-?", "");
    List<Integer> out = new ArrayList<>();
    for (String s : v.split("\\.")) {
      try {
        out.add(Integer.parseInt(s));
      } catch (NumberFormatException e) {
        out.add(-1);
      }
    }
    return out;
  }

  private static int compare(List<Integer> a, List<Integer> b) {
    for (int i = 0; i < Math.min(a.size(), b.size()); i++)
      if (!a.get(i).equals(b.get(i))) return Integer.compare(a.get(i), b.get(i));
    return Integer.compare(a.size(), b.size());
  }

  /** Folders of the ld.so cache entries for our libraries ({@code ldconfig -p}). */
  static List<Path> ldCache() {
    List<Path> out = new ArrayList<>();
    for (String ldconfig : List.of("/sbin/ldconfig", "/usr/sbin/ldconfig")) {
      if (!Files.isExecutable(Path.of(ldconfig))) continue;
      for (String line : run(ldconfig, "-p").split("\n")) {
        int arrow = line.indexOf("=> ");
        if (arrow < 0) continue;
        if (LIBRARIES.containsKey(line.trim().split("\\s")[0])) {
          Path parent = Path.of(line.substring(arrow + 3).trim()).getParent();
          if (parent != null) out.add(parent);
        }
      }
      break;
    }
    return out;
  }

  /** The site-packages folders of the machine's {@code python3} (none if it has none). */
  static List<Path> python() {
    String text =
        run(
            "python3",
            "-c",
            "import site; print('\\n'.join(site.getsitepackages() + [site.getusersitepackages()]))");
    List<Path> out = new ArrayList<>();
    for (String s : text.split("\n")) if (s.startsWith("/")) out.add(Path.of(s.trim()));
    return out;
  }

  /** A command's output, or "" when it cannot run, fails or takes over 10 s. */
  private static String run(String... cmd) {
    Path out = null;
    try {
      // through a file: a pipe nobody reads could block a chatty command past the timeout
      out = Files.createTempFile("troupe-probe", ".txt");
      Process p =
          new ProcessBuilder(cmd)
              .redirectErrorStream(true)
              .redirectOutput(out.toFile())
              .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
              .start();
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return "";
      }
      return p.exitValue() == 0 ? Files.readString(out, StandardCharsets.UTF_8) : "";
    } catch (IOException e) {
      return "";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "";
    } finally {
      if (out != null)
        try {
          Files.deleteIfExists(out);
        } catch (IOException ignored) {
          // a temp file left behind
        }
    }
  }

  private CudaLibraries() {}
}
