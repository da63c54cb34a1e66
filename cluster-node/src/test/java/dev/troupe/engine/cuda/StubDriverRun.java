package dev.troupe.engine.cuda;

import dev.troupe.engine.DeviceSampling;
import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import dev.troupe.engine.testing.MapWeights;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import org.bytedeco.javacpp.BytePointer;

/**
 * The forked JVM of {@link StubDriverTest}: the real {@link CudaProbe} and {@link CudaGpu} over the
 * stand-in driver, cuBLAS and runtime ({@link NativeStubs}) and the real NVRTC.
 *
 * <ul>
 *   <li>{@code probe}: JavaCPP is used first (its properties cached, as OpenBLAS does in a node),
 *       then the probe runs; prints its summary, exit 0 when it found a usable GPU.
 *   <li>{@code run MEANT_LOG}: a copy round trip, then every tiny architecture through {@link
 *       CudaModelRunner} (prefill, LoRA rows, device sampling, a block copy) and a training step on
 *       the runner's GPU ({@link CudaTrainer}), each {@link Gpu} wrapped in a {@link RecordingGpu}
 *       writing what was meant to MEANT_LOG; its decode steps run as CUDA graphs (captured, then
 *       replayed), the first one also eagerly.
 *   <li>{@code stale}: a graph whose buffer was freed after its capture is launched: the stand-in
 *       driver must refuse it (exit 0 when it did).
 * </ul>
 */
final class StubDriverRun {
  private StubDriverRun() {}

  public static void main(String[] args) throws Exception {
    if (args[0].equals("probe")) {
      try (BytePointer p = new BytePointer(16)) {
        p.put(0, (byte) 1); // JavaCPP loaded and its properties cached before the probe
      }
      CudaProbe.Result r = CudaProbe.get();
      System.out.println("probe: " + r.summary());
      System.exit(r.usable() ? 0 : 3);
    }
    CudaProbe.Result r = CudaProbe.get();
    System.out.println("probe: " + r.summary());
    if (!r.usable()) System.exit(3);
    if (args[0].equals("stale")) {
      staleGraph(CudaProbe.open(0));
      return;
    }
    try (PrintStream meant = new PrintStream(new FileOutputStream(args[1]), true)) {
      roundTrip(new RecordingGpu(CudaProbe.open(0), meant));
      for (Arch a : Arch.values()) runner(new RecordingGpu(CudaProbe.open(0), meant), a);
    }
    System.out.println("done");
  }

  /** Upload, device copy, download: the bytes come back; one buffer is left for close to free. */
  static void roundTrip(Gpu g) {
    int n = 4096;
    ByteBuffer src = ByteBuffer.allocateDirect(n), back = ByteBuffer.allocateDirect(n);
    for (int i = 0; i < n; i++) src.put(i, (byte) (i * 31 + 7));
    long a = g.alloc(n), b = g.alloc(n);
    g.alloc(100); // not freed: CudaGpu.close must
    g.upload(a, src);
    g.copy(b, a, n);
    g.download(b, back);
    if (!src.equals(back)) throw new AssertionError("round trip changed the bytes");
    g.free(a);
    g.free(b);
    g.close();
  }

  static void runner(Gpu g, Arch arch) {
    // room for a row past one attention partition (split over blocks, then attention_merge)
    ModelConfig c = TinyModels.withMaxPositions(TinyModels.config(arch), 2 * KernelSource.ATT_PART);
    Map<String, float[]> w = TinyModels.randomWeights(c, 5);
    int bs = 4;
    int[] p = {3, 9, 27, 81, 50, 11, 2}, q = {4, 16, 64};
    LoraAdapter lora =
        CudaModelRunnerTest.adapter(
            c, 2, 4.0, 9, "self_attn.q_proj", "self_attn.o_proj", "mlp.up_proj", "mlp.down_proj");
    try (CudaModelRunner run = CudaModelRunner.load(g, c, new MapWeights(c, w), bs, 100, 0, 8)) {
      run.registerAdapter(1, lora);
      // two prefill chunks, one with the adapter, all logits of one (more rows than the buffers
      // were sized for: they grow)
      run.forward(
          List.of(
              new SequenceChunk(p, 0, new int[] {0, 1}, true, 1),
              new SequenceChunk(q, 0, new int[] {2}, false)));
      // decode both, sampled on the device, logits of the first also to the host
      DeviceSampling.Params greedy = DeviceSampling.Params.simple(true, 1f, 0, 1f, 0f, 0.5);
      DeviceSampling.Params drawn = DeviceSampling.Params.simple(false, 0.8f, 5, 0.9f, 0f, 0.25);
      // the same step three times: eagerly, captured into a graph and launched, launched again
      for (int i = 0; i < 3; i++) {
        run.useCudaGraphs(i > 0);
        run.forwardSample(
            List.of(
                new SequenceChunk(new int[] {7}, p.length, new int[] {0, 1}, false, 1),
                new SequenceChunk(new int[] {8}, q.length, new int[] {2}, false)),
            new boolean[] {true, false},
            List.of(new DeviceSampling.Row(0, greedy), new DeviceSampling.Row(1, drawn)));
      }
      // one sequence without an adapter: a graph of batch 1 (no LoRA launches), host logits only
      run.forward(List.of(new SequenceChunk(new int[] {9}, q.length + 1, new int[] {2, 3}, false)));
      // a decode row at a position past the first attention partition
      int far = KernelSource.ATT_PART + 44;
      int[] farTable = new int[far / bs + 1];
      for (int i = 0; i < farTable.length; i++) farTable[i] = 10 + i;
      run.forward(List.of(new SequenceChunk(new int[] {6}, far, farTable, false)));
      run.copyBlock(2, 3);
      run.removeAdapter(1);
      train(run, c);
    }
  }

  /** A captured launch whose buffer is freed before the graph runs: cuGraphLaunch must fail. */
  static void staleGraph(Gpu g) {
    ModelConfig c = TinyModels.config(Arch.LLAMA);
    g.loadKernels(KernelSource.generate(c, 4), KernelSource.KERNELS);
    int inter = c.intermediateSize();
    long gu = g.alloc(8L * inter), a = g.alloc(2L * inter);
    g.beginCapture();
    g.launch("silu_mul", 1, 1, KernelSource.ELEMENT_THREADS, gu, a, inter);
    long graph = g.endCapture();
    g.launchGraph(graph); // its buffers are live
    g.free(a);
    try {
      g.launchGraph(graph);
      System.out.println("stale graph launched");
      System.exit(4);
    } catch (CudaException e) {
      System.out.println("refused: " + e.getMessage());
    }
    g.destroyGraph(graph);
    g.free(gu);
    g.close();
  }

  /**
   * A training step on the runner's own GPU and weights (CudaModelRunner#trainer): every training
   * kernel and the products with transposed operands; the new adapter registered in memory.
   */
  static void train(CudaModelRunner run, ModelConfig c) {
    int[] tokens = {5, 9, 13, 2, 7, 11, 3};
    int n = tokens.length;
    boolean[] mask = {false, true, true, false, true, true, false};
    double[] old = new double[n], adv = new double[n], weights = new double[n];
    java.util.Arrays.fill(old, -2.0);
    java.util.Arrays.fill(adv, 0.5);
    java.util.Arrays.fill(weights, 1.0);
    try (CudaTrainer t =
        run.trainer(new CudaTrainer.Adapter(2, 4.0, List.of("q_proj", "v_proj", "down_proj")), 8)) {
      java.util.Map<String, double[]> zero = new java.util.LinkedHashMap<>();
      t.shapes().forEach((k, v) -> zero.put(k, new double[(int) (v[0] * v[1])]));
      t.parameters(zero);
      t.step(
          tokens,
          new int[] {0, 1, 2, 3, 0, 1, 2},
          new int[] {0, 0, 0, 0, 1, 1, 1},
          new CudaTrainer.Targets(mask, old, adv, weights, new int[] {4, 4, 4, 4, 5, 5, 5}),
          dev.troupe.protocol.cluster.TrainingConfig.defaults(),
          new CudaTrainer.Adam(0.9, 0.99, 1e-8, 0.1, 0.1),
          1e-3);
      run.registerAdapter(3, t.adapter(1));
    }
    run.removeAdapter(3);
  }
}
