package dev.troupe.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real {@link CudaProbe} and {@link CudaGpu} call path, through the JavaCPP bindings, against a
 * driver and cuBLAS that record what they receive ({@link NativeStubs}) and the real NVRTC, in a
 * forked JVM ({@link StubDriverRun}): what no GPU-less test saw before, since the emulator ({@link
 * EmulatedGpu}) marshals its own arguments. Checked against what the runner meant ({@link
 * RecordingGpu}): every kernel launch's name, grid, block and argument values as the driver reads
 * them from the cubin's parameter table; every product's cuBLAS arguments; allocations, copies and
 * frees (every allocation freed, by the runner itself, before its context is released); every
 * pointer argument inside a live allocation; one non-blocking stream for launches and cuBLAS.
 */
class StubDriverTest {
  @TempDir Path tmp;

  static void assumeTools() {
    GpuBackends.skipUnless(
        NativeStubs.compiler() != null, "stub-driver tests skipped: no C compiler (gcc)");
    GpuBackends.skipUnless(
        NativeStubs.nvrtcOnClasspath(),
        "stub-driver tests skipped: org.bytedeco:cuda-redist (NVRTC, test scope) not on the classpath");
  }

  private ForkedJvm fork(Map<String, String> env, String... args) {
    Map<String, String> e = new HashMap<>(env);
    e.putIfAbsent("CUDA_HOME", null);
    e.putIfAbsent("CUDA_PATH", null);
    e.put("TROUPE_CUDA_STUB_LOG", tmp.resolve("driver.log").toString());
    return ForkedJvm.run(
        // without the redistributable jar: JavaCPP must load what the probe found
        ForkedJvm.classpath(s -> s.contains("cuda-redist")),
        e,
        List.of("-Dtroupe.worker.compute.cuda-kernel-cache=" + tmp.resolve("kernels")),
        tmp.resolve("child.log"),
        StubDriverRun.class,
        args);
  }

  /**
   * A replayed decode step's driver and cuBLAS calls as the stand-ins count them ({@link
   * StubStepCost}): the metadata and the sampling parameters up, one graph launch, the results down
   * and the wait for them — no kernel launch or product of its own, whatever the layers.
   */
  @Test
  void aReplayedDecodeStepMakesAHandfulOfDriverCalls() {
    assumeTools();
    List<StubStepCost.Result> results =
        StubStepCost.measure("tiny-qwen3", 2, 3, tmp, List.of(1, 5), true);
    assertEquals(2, results.size());
    for (StubStepCost.Result r : results) {
      String what = "batch " + r.batch() + ", calls per step: " + r.callsPerStep();
      assertEquals(1, r.calls("cuGraphLaunch"), what);
      assertEquals(0, r.calls("cuLaunchKernel") + r.calls("cublasGemmEx"), what);
      assertEquals(0, r.calls("cuStreamBeginCapture_v2"), what + " (captured again)");
      assertEquals(2, r.calls("cuMemcpyHtoDAsync_v2"), what);
      assertEquals(1, r.calls("cuMemcpyDtoHAsync_v2"), what);
      assertEquals(1, r.calls("cuStreamSynchronize"), what);
      assertEquals(5, r.totalCalls(), what);
    }
  }

  /**
   * An eager decode step's calls ({@code --enforce-eager}): per layer its five kernels and four
   * products; per step the embedding, the final norm, the LM head and the sampling kernel, the
   * metadata and the sampling parameters up, the results down and the wait for them. No context
   * switch, allocation or free: a count, so it holds on any machine.
   */
  @Test
  void anEagerDecodeStepMakesABoundedNumberOfDriverCalls() {
    assumeTools();
    String shape = "tiny-qwen3";
    int layers = StubStepCost.shape(shape).numLayers();
    List<StubStepCost.Result> results =
        StubStepCost.measure(shape, 2, 3, tmp, List.of(1, 5), false);
    assertEquals(2, results.size());
    for (StubStepCost.Result r : results) {
      String what = "batch " + r.batch() + ", calls per step: " + r.callsPerStep();
      assertEquals(5 * layers + 3, r.calls("cuLaunchKernel"), what);
      assertEquals(4 * layers + 1, r.calls("cublasGemmEx"), what);
      assertEquals(0, r.calls("cuCtxSetCurrent"), what);
      assertEquals(0, r.calls("cuMemAlloc_v2") + r.calls("cuMemFree_v2"), what);
      assertEquals(1, r.calls("cuStreamSynchronize"), what);
      assertEquals(0, r.calls("cuGraphLaunch"), what);
      assertTrue(r.totalCalls() <= 9 * layers + 8, what);
    }
  }

  @Test
  void everyLaunchProductCopyAndFreeReachesTheDriverAsTheRunnerMeantIt() throws Exception {
    assumeTools();
    Path stubs = NativeStubs.recording();
    Path meantLog = tmp.resolve("meant.log");
    ForkedJvm run = fork(Map.of("LD_LIBRARY_PATH", stubs.toString()), "run", meantLog.toString());
    String driverText = ForkedJvm.read(tmp.resolve("driver.log"));
    String context =
        "\n--- child:\n" + run.output() + "\n--- driver log (tail):\n" + tail(driverText);
    assertEquals(0, run.exitCode(), "the forked JVM failed" + context);
    assertTrue(run.output().contains("Troupe recording stub"), run.output());
    List<DriverCall> driver = DriverCall.parse(driverText);
    List<DriverCall> meant = DriverCall.parse(Files.readString(meantLog));

    // launches: name, grid, block and every argument as the driver decodes it
    List<DriverCall> wanted = DriverCall.only(meant, "launch");
    List<DriverCall> got = DriverCall.only(driver, "cuLaunchKernel");
    assertEquals(wanted.size(), got.size(), "launches" + context);
    Set<String> streams = new HashSet<>();
    for (DriverCall c : DriverCall.only(driver, "cuStreamCreate")) {
      assertEquals("1", c.get("flags"), "CU_STREAM_NON_BLOCKING: " + c.line());
      streams.add(c.get("stream"));
    }
    for (int i = 0; i < wanted.size(); i++) {
      DriverCall w = wanted.get(i), g = got.get(i);
      for (String k : List.of("name", "grid", "block", "args"))
        assertEquals(
            w.get(k),
            g.get(k),
            "launch " + i + " " + k + ":\n meant " + w.line() + "\n got   " + g.line());
      assertEquals("0", g.get("shared"), g.line());
      assertTrue(streams.contains(g.get("stream")), "launch on an unknown stream: " + g.line());
    }
    Set<String> launched = new HashSet<>();
    got.forEach(g -> launched.add(g.get("name")));
    assertEquals(new HashSet<>(KernelSource.KERNELS), launched, "kernels launched");
    List<DriverCall> modules = DriverCall.only(driver, "cuModuleLoadData");
    assertFalse(modules.isEmpty());
    for (DriverCall m : modules) {
      assertEquals("sm_90", m.get("arch"), m.line());
      assertEquals(KernelSource.KERNELS.size(), (int) m.number("kernels"), m.line());
    }
    assertEquals(modules.size(), DriverCall.only(driver, "cuModuleUnload").size(), "unloads");
    for (DriverCall s : DriverCall.only(driver, "cublasSetStream"))
      assertTrue(streams.contains(s.get("stream")), "cuBLAS on another stream: " + s.line());

    // products: cuBLAS column-major, row-major C = op(A)·op(B) as Cᵀ = op(B)ᵀ·op(A)ᵀ
    List<DriverCall> products = DriverCall.only(meant, "matmul");
    List<DriverCall> blas = DriverCall.only(driver, "cublasGemmEx");
    assertEquals(products.size(), blas.size(), "products" + context);
    for (int i = 0; i < products.size(); i++) {
      DriverCall w = products.get(i), g = blas.get(i);
      Map<String, Long> want = new TreeMap<>();
      want.put("opA", Boolean.parseBoolean(w.get("transB")) ? 1L : 0L); // CUBLAS_OP_T / _N
      want.put("opB", Boolean.parseBoolean(w.get("transA")) ? 1L : 0L);
      want.put("m", w.number("n"));
      want.put("n", w.number("m"));
      want.put("k", w.number("k"));
      want.put("A", w.number("b"));
      want.put("lda", w.number("ldb"));
      want.put("B", w.number("a"));
      want.put("ldb", w.number("lda"));
      want.put("C", w.number("c"));
      want.put("ldc", w.number("ldc"));
      want.put("typeA", 14L); // CUDA_R_16BF
      want.put("typeB", 14L);
      want.put("typeC", Boolean.parseBoolean(w.get("cBf16")) ? 14L : 0L); // CUDA_R_32F
      want.put("compute", 68L); // CUBLAS_COMPUTE_32F
      want.put("algo", -1L); // CUBLAS_GEMM_DEFAULT
      Map<String, Long> have = new TreeMap<>();
      for (String k : want.keySet()) have.put(k, g.number(k));
      assertEquals(want, have, "product " + i + ":\n meant " + w.line() + "\n got   " + g.line());
      assertEquals(Float.parseFloat(w.get("alpha")), Float.parseFloat(g.get("alpha")), g.line());
      assertEquals(Float.parseFloat(w.get("beta")), Float.parseFloat(g.get("beta")), g.line());
    }
    assertTrue(
        products.stream().anyMatch(p -> p.get("transA").equals("true")),
        "a product with a transposed A (training's weight gradients) reached cuBLAS");

    // strided batches (training's attention, per head): the same mapping, each operand's stride
    // going with it
    List<DriverCall> batches = DriverCall.only(meant, "matmulBatched");
    List<DriverCall> blasBatches = DriverCall.only(driver, "cublasGemmStridedBatchedEx");
    assertEquals(batches.size(), blasBatches.size(), "batched products" + context);
    assertFalse(batches.isEmpty(), "training's attention made no batched product");
    for (int i = 0; i < batches.size(); i++) {
      DriverCall w = batches.get(i), g = blasBatches.get(i);
      Map<String, Long> want = new TreeMap<>();
      want.put("opA", Boolean.parseBoolean(w.get("transB")) ? 1L : 0L);
      want.put("opB", Boolean.parseBoolean(w.get("transA")) ? 1L : 0L);
      want.put("m", w.number("n"));
      want.put("n", w.number("m"));
      want.put("k", w.number("k"));
      want.put("A", w.number("b"));
      want.put("lda", w.number("ldb"));
      want.put("strideA", w.number("strideB"));
      want.put("B", w.number("a"));
      want.put("ldb", w.number("lda"));
      want.put("strideB", w.number("strideA"));
      want.put("C", w.number("c"));
      want.put("ldc", w.number("ldc"));
      want.put("strideC", w.number("strideC"));
      want.put("batch", w.number("batch"));
      want.put("typeA", 14L);
      want.put("typeB", 14L);
      want.put("typeC", Boolean.parseBoolean(w.get("cBf16")) ? 14L : 0L);
      want.put("compute", 68L);
      want.put("algo", -1L);
      Map<String, Long> have = new TreeMap<>();
      for (String k : want.keySet()) have.put(k, g.number(k));
      assertEquals(want, have, "batch " + i + ":\n meant " + w.line() + "\n got   " + g.line());
      assertEquals(Float.parseFloat(w.get("alpha")), Float.parseFloat(g.get("alpha")), g.line());
      assertEquals(Float.parseFloat(w.get("beta")), Float.parseFloat(g.get("beta")), g.line());
    }

    // cuBLAS's fixed workspace (CudaGpu's own, so no runner meant it): one per handle, live at
    // every product (graphs capture products, which must not allocate)
    List<DriverCall> workspaces = DriverCall.only(driver, "cublasSetWorkspace");
    assertEquals(DriverCall.only(driver, "cublasCreate").size(), workspaces.size(), "workspaces");
    Set<Long> workspace = new HashSet<>();
    for (DriverCall w : workspaces) {
      assertEquals(CudaGpu.BLAS_WORKSPACE_BYTES, w.number("bytes"), w.line());
      workspace.add(w.number("ptr"));
    }
    List<DriverCall> allocs =
        driver.stream()
            .filter(c -> !(c.fn().equals("cuMemAlloc") && workspace.contains(c.number("ptr"))))
            .toList();

    // graphs: launches and products between a capture's begin and end are recorded, not run
    // (marked captured), and nothing else happens meanwhile; each graph launched is one
    // instantiated, its pointers checked by the stand-in at every launch
    boolean open = false;
    int capturedLaunches = 0, capturedProducts = 0;
    Set<String> execs = new HashSet<>();
    for (DriverCall c : driver) {
      switch (c.fn()) {
        case "cuStreamBeginCapture" -> {
          assertFalse(open, c.line());
          assertTrue(streams.contains(c.get("stream")), c.line());
          open = true;
        }
        case "cuStreamEndCapture" -> {
          assertTrue(open, c.line());
          assertTrue(c.number("nodes") > 0, c.line());
          open = false;
        }
        case "cuLaunchKernel", "cublasGemmEx", "cublasGemmStridedBatchedEx" -> {
          assertEquals(open, c.line().endsWith(" captured=1"), "captured or not: " + c.line());
          if (open && c.fn().equals("cuLaunchKernel")) capturedLaunches++;
          else if (open) capturedProducts++;
        }
        case "cuGraphInstantiate" -> execs.add(c.get("exec"));
        case "cuGraphLaunch" -> {
          assertFalse(c.line().contains("error="), c.line());
          assertTrue(execs.contains(c.get("exec")), "launch of an unknown graph: " + c.line());
        }
        default -> assertFalse(open, "during a capture: " + c.line());
      }
    }
    assertFalse(open, "a capture left open");
    assertEquals(
        DriverCall.only(meant, "launchGraph").size(),
        DriverCall.only(driver, "cuGraphLaunch").size(),
        "graph launches");
    assertTrue(capturedLaunches > 0 && capturedProducts > 0, "decode steps captured as graphs");
    assertEquals(
        DriverCall.only(driver, "cuGraphInstantiate").size(),
        DriverCall.only(driver, "cuGraphExecDestroy").size(),
        "every graph destroyed");
    assertTrue(
        DriverCall.only(driver, "cuGraphLaunch").size()
            > DriverCall.only(driver, "cuGraphInstantiate").size(),
        "graphs replayed after their capture");

    // allocations and copies, in order
    same(meant, "alloc", allocs, "cuMemAlloc", "ptr", "bytes");
    same(meant, "upload", driver, "cuMemcpyHtoDAsync", "dst", "bytes");
    same(meant, "download", driver, "cuMemcpyDtoHAsync", "src", "bytes");
    same(meant, "copy", driver, "cuMemcpyDtoDAsync", "dst", "src", "bytes");

    // device pointers inside live allocations; nothing live when a context is released
    Map<Long, Long> live = new HashMap<>();
    int releases = 0;
    for (DriverCall c : driver) {
      switch (c.fn()) {
        case "cuMemAlloc" -> live.put(c.number("ptr"), c.number("bytes"));
        case "cuMemFree" -> assertTrue(live.remove(c.number("ptr")) != null, c.line());
        case "cuLaunchKernel" -> {
          for (String a : c.get("args").split(",")) {
            if (!a.startsWith("8:")) continue;
            long p = Long.parseUnsignedLong(a.substring(4), 16);
            assertTrue(p == 0 || inside(live, p, 1), "pointer outside allocations: " + c.line());
          }
        }
        case "cublasGemmEx" -> {
          // column-major operands: op N reads [rows, cols] with ld ≥ rows, op T [cols, rows]
          long m = c.number("m"), n = c.number("n"), k = c.number("k");
          long cb = c.number("typeC") == 14 ? 2 : 4;
          long a =
              extent(c.number("opA") == 0 ? m : k, c.number("opA") == 0 ? k : m, c.number("lda"));
          long b =
              extent(c.number("opB") == 0 ? k : n, c.number("opB") == 0 ? n : k, c.number("ldb"));
          assertTrue(inside(live, c.number("A"), a * 2), "A outside: " + c.line());
          assertTrue(inside(live, c.number("B"), b * 2), "B outside: " + c.line());
          assertTrue(
              inside(live, c.number("C"), extent(m, n, c.number("ldc")) * cb),
              "C outside: " + c.line());
        }
        case "cublasGemmStridedBatchedEx" -> {
          // the last member's operands lie their strides × (batch − 1) past the first's
          long m = c.number("m"), n = c.number("n"), k = c.number("k");
          long cb = c.number("typeC") == 14 ? 2 : 4, last = c.number("batch") - 1;
          long a =
              extent(c.number("opA") == 0 ? m : k, c.number("opA") == 0 ? k : m, c.number("lda"));
          long b =
              extent(c.number("opB") == 0 ? k : n, c.number("opB") == 0 ? n : k, c.number("ldb"));
          assertTrue(
              inside(live, c.number("A"), (a + last * c.number("strideA")) * 2),
              "A outside: " + c.line());
          assertTrue(
              inside(live, c.number("B"), (b + last * c.number("strideB")) * 2),
              "B outside: " + c.line());
          assertTrue(
              inside(
                  live,
                  c.number("C"),
                  (extent(m, n, c.number("ldc")) + last * c.number("strideC")) * cb),
              "C outside: " + c.line());
        }
        case "cuDevicePrimaryCtxRelease" -> {
          releases++;
          assertEquals(0, c.number("live"), "allocations left at " + c.line() + context);
        }
        default -> {}
      }
    }
    int opens = DriverCall.only(meant, "open").size();
    assertEquals(opens, releases, "every opened GPU released its context");
    assertEquals(
        opens, DriverCall.only(driver, "cublasDestroy").size(), "cuBLAS handles destroyed");

    // the runner frees what it allocated before it closes the GPU (not only CudaGpu's safety net)
    Set<Long> mine = new HashSet<>();
    boolean runner = false;
    for (DriverCall c : meant) {
      switch (c.fn()) {
        case "open" -> {
          mine.clear();
          runner = false;
        }
        case "loadKernels" -> runner = true;
        case "alloc" -> mine.add(c.number("ptr"));
        case "free" -> mine.remove(c.number("ptr"));
        case "close" ->
            assertTrue(
                !runner || mine.isEmpty(),
                "the runner left "
                    + mine.stream().map(Long::toHexString).toList()
                    + " allocated at its close");
        default -> {}
      }
    }
  }

  /** A graph launched after a buffer it holds was freed: the stand-in driver refuses it. */
  @Test
  void aGraphOutlivingItsBufferIsRefusedAtLaunch() throws Exception {
    assumeTools();
    ForkedJvm run = fork(Map.of("LD_LIBRARY_PATH", NativeStubs.recording().toString()), "stale");
    assertEquals(0, run.exitCode(), run.output());
    assertTrue(run.output().contains("refused: cuGraphLaunch failed"), run.output());
    String log = ForkedJvm.read(tmp.resolve("driver.log"));
    assertTrue(log.contains("error=pointer-outside-allocations"), log);
  }

  @Test
  void theProbeLoadsTheLibrariesItFoundAfterJavaCppHasStarted() throws Exception {
    assumeTools();
    // only $CUDA_HOME/lib64 holds them: not LD_LIBRARY_PATH, not the ld.so cache
    Path home = tmp.resolve("cuda-home");
    Files.createDirectories(home);
    Files.createSymbolicLink(home.resolve("lib64"), NativeStubs.recording());
    Map<String, String> env = new HashMap<>();
    env.put("LD_LIBRARY_PATH", null);
    env.put("CUDA_HOME", home.toString());
    ForkedJvm run = fork(env, "probe");
    assertEquals(0, run.exitCode(), run.output());
    assertTrue(run.output().contains("1 usable GPU(s)"), run.output());
    assertTrue(run.output().contains(home.resolve("lib64").toString()), run.output());
  }

  /** Elements a column-major [rows, cols] matrix with leading dimension ld spans. */
  private static long extent(long rows, long cols, long ld) {
    return rows == 0 || cols == 0 ? 0 : (cols - 1) * ld + rows;
  }

  private static boolean inside(Map<Long, Long> live, long p, long bytes) {
    for (Map.Entry<Long, Long> a : live.entrySet())
      if (p >= a.getKey() && p - a.getKey() + bytes <= a.getValue()) return true;
    return false;
  }

  /**
   * The meant calls {@code fn} and the driver's {@code driverFn} agree on {@code keys}, in order.
   */
  private static void same(
      List<DriverCall> meant, String fn, List<DriverCall> driver, String driverFn, String... keys) {
    List<DriverCall> w = DriverCall.only(meant, fn), g = DriverCall.only(driver, driverFn);
    assertEquals(w.size(), g.size(), fn + " calls");
    List<String> diffs = new ArrayList<>();
    for (int i = 0; i < w.size(); i++)
      for (String k : keys)
        if (w.get(i).number(k) != g.get(i).number(k))
          diffs.add(w.get(i).line() + " / " + g.get(i).line());
    assertTrue(diffs.isEmpty(), fn + ": " + diffs);
  }

  private static String tail(String text) {
    String[] lines = text.split("\n");
    return String.join("\n", List.of(lines).subList(Math.max(0, lines.length - 40), lines.length));
  }
}
