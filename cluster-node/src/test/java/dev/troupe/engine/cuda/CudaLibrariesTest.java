package dev.troupe.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where the probe looks for CUDA's libraries, on a made-up file system under a temporary root. */
class CudaLibrariesTest {
  @TempDir Path root;

  private Path libs(String dir, String... names) throws IOException {
    Path d = Files.createDirectories(root.resolve(dir));
    for (String n : names) Files.createFile(d.resolve(n));
    return d;
  }

  private CudaLibraries.Found search(Map<String, String> env, List<Path> python) {
    return CudaLibraries.search(env::get, root, List::of, () -> python);
  }

  @Test
  void findsCublasAndNvrtcInPipsCu13FolderWhenTheToolkitHasOnlyTheRuntime() throws IOException {
    // the GPU machines' image: a toolkit folder from pip wheels with cudart but no cuBLAS or NVRTC,
    // which live only in the PyTorch virtual environment's nvidia/cu13/lib
    Path driver = libs("usr/lib/x86_64-linux-gnu", "libcuda.so.1");
    Path toolkit = libs("usr/local/cuda-13.0/lib64", "libcudart.so.13");
    Path pip =
        libs(
            "opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib",
            "libcublas.so.13",
            "libcublasLt.so.13",
            "libnvrtc.so.13",
            "libnvrtc-builtins.so.13.0",
            "libcudart.so.13");
    CudaLibraries.Found f = search(Map.of(), List.of());
    assertNull(f.missing(), f.missing());
    assertEquals(driver, f.found().get("libcuda.so.1"));
    assertEquals(toolkit, f.found().get("libcudart.so.13"), "the toolkit's runtime comes first");
    for (String lib : List.of("libcublas.so.13", "libcublasLt.so.13", "libnvrtc.so.13"))
      assertEquals(pip, f.found().get(lib), lib);
    assertTrue(
        f.describe().contains("libcublasLt.so.13, libcublas.so.13, libnvrtc.so.13 from " + pip),
        f.describe());
  }

  @Test
  void searchOrderIsLdLibraryPathThenCudaHomeThenToolkitsNewestFirst() throws IOException {
    String[] all = CudaLibraries.LIBRARIES.keySet().toArray(String[]::new);
    libs("usr/local/cuda-12.9/lib64", all);
    Path newest = libs("usr/local/cuda-13.1/lib64", all);
    libs("usr/local/cuda-13.0/lib64", all);
    assertEquals(newest, search(Map.of(), List.of()).found().get("libcublas.so.13"));
    Path home = libs("home-cuda/lib64", all);
    Map<String, String> env =
        new HashMap<>(Map.of("CUDA_HOME", root.resolve("home-cuda").toString()));
    assertEquals(home, search(env, List.of()).found().get("libnvrtc.so.13"));
    Path ld = libs("ld", all);
    env.put("LD_LIBRARY_PATH", "/nowhere::" + ld);
    assertEquals(ld, search(env, List.of()).found().get("libcuda.so.1"));
  }

  @Test
  void asksPythonOnlyForWhatTheFixedFoldersLack() throws IOException {
    libs("usr/lib64", "libcuda.so.1", "libcudart.so.13");
    Path site = root.resolve("somewhere/site-packages");
    Path pip =
        libs(
            "somewhere/site-packages/nvidia/cu13/lib",
            "libcublas.so.13",
            "libcublasLt.so.13",
            "libnvrtc.so.13");
    AtomicInteger asked = new AtomicInteger();
    CudaLibraries.Found f =
        CudaLibraries.search(
            Map.<String, String>of()::get,
            root,
            List::of,
            () -> {
              asked.incrementAndGet();
              return List.of(site);
            });
    assertEquals(1, asked.get());
    assertNull(f.missing());
    assertEquals(pip, f.found().get("libnvrtc.so.13"));
    libs("usr/lib64", "libcublas.so.13", "libcublasLt.so.13", "libnvrtc.so.13");
    CudaLibraries.search(
        Map.<String, String>of()::get,
        root,
        List::of,
        () -> {
          asked.incrementAndGet();
          return List.of();
        });
    assertEquals(1, asked.get(), "everything found: python3 not run");
  }

  @Test
  void aMissingLibraryIsNamedWithTheFoldersSearched() throws IOException {
    Path d = libs("usr/local/cuda/lib64", "libcuda.so.1", "libcudart.so.13");
    CudaLibraries.Found f = search(Map.of("CUDA_HOME", "/no/such/cuda"), List.of());
    assertEquals(Map.of("libcuda.so.1", d, "libcudart.so.13", d), f.found());
    String m = f.missing();
    assertTrue(m.startsWith("no usable GPU: "), m);
    assertTrue(
        m.contains(
            "libcublasLt.so.13 (cuBLASLt 13), libcublas.so.13 (cuBLAS 13), libnvrtc.so.13 (NVRTC 13) not found"),
        m);
    assertTrue(m.contains(d.toString()), "the folders that exist are named: " + m);
    assertTrue(m.contains("absent ones"), m);
    assertFalse(m.contains("/no/such/cuda"), m);
    assertTrue(m.contains("install the CUDA 13 toolkit"), m);
    assertFalse(m.contains("\n"), "one line");
    Files.delete(d.resolve("libcuda.so.1"));
    assertTrue(search(Map.of(), List.of()).missing().contains("this machine has no NVIDIA driver"));
  }

  @Test
  void globMatchesNamesWithinOneLevel() throws IOException {
    libs("opt/a/.venv/lib/python3.11/site-packages/nvidia/cu13/lib");
    libs("opt/b/.venv/lib/python3.12/site-packages/nvidia/cu13/lib");
    libs("opt/b/.venv/lib/python2.7/site-packages/nvidia/cu13/lib");
    assertEquals(
        List.of(
            root.resolve("opt/a/.venv/lib/python3.11/site-packages/nvidia/cu13/lib"),
            root.resolve("opt/b/.venv/lib/python3.12/site-packages/nvidia/cu13/lib")),
        CudaLibraries.glob(root, "opt/*/.venv/lib/python3*/site-packages/nvidia/cu13/lib"));
  }
}
