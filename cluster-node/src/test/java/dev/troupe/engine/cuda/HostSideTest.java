package dev.troupe.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.DeviceSampling;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.Quantization;
import dev.troupe.engine.runner.DeviceSettings;
import dev.troupe.engine.runner.Devices;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.IntBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the CUDA path does on the host: batch packing, kernel source, BF16, device choice. */
class HostSideTest {
  @TempDir Path tmp;

  @Test
  void samplingRowsPackTheirParametersAndSourceRowsForOneUpload() {
    int[] none = new int[0];
    DeviceSampling.Params a =
        new DeviceSampling.Params(
            false,
            0.7f,
            5,
            0.9f,
            0.05f,
            0.25,
            3,
            new int[] {4, 8},
            new int[] {2},
            new int[] {8},
            new float[] {-1.5f},
            1.3f,
            new int[] {4, 6},
            0.5f,
            0.25f,
            new int[] {6},
            new int[] {2});
    DeviceSampling.Params b = DeviceSampling.Params.simple(true, 1f, 0, 1f, 0f, 0.75);
    DeviceSampler.Packed p = DeviceSampler.pack(List.of(a, b), new int[] {7, 7});
    ByteBuffer bb = p.bytes().order(ByteOrder.LITTLE_ENDIAN);
    assertEquals(0.25, bb.getDouble((int) p.uniforms()));
    assertEquals(0.75, bb.getDouble((int) p.uniforms() + 8));
    int[] ipA = new int[DeviceSampler.ROW_INTS], ipB = new int[DeviceSampler.ROW_INTS];
    for (int k = 0; k < ipA.length; k++) {
      ipA[k] = bb.getInt((int) p.ip() + 4 * k);
      ipB[k] = bb.getInt((int) p.ip() + 4 * (DeviceSampler.ROW_INTS + k));
    }
    // top_k, logprobs, int offset, float offset, allowed, masked, bias, seen, counts, greedy,
    // source logit row (both rows sample row 7: two choices of one prompt)
    assertArrayEquals(new int[] {5, 3, 0, 0, 2, 1, 1, 2, 1, 0, 7}, ipA);
    assertArrayEquals(new int[] {0, -1, 8, 4, 0, 0, 0, 0, 0, 1, 7}, ipB);
    assertEquals(0.7f, bb.getFloat((int) p.fp()));
    assertEquals(0.9f, bb.getFloat((int) p.fp() + 4));
    assertEquals(0.05f, bb.getFloat((int) p.fp() + 8));
    int[] ints = new int[8];
    for (int k = 0; k < ints.length; k++) ints[k] = bb.getInt((int) p.ints() + 4 * k);
    // allowed, masked, bias ids, seen, count ids, counts
    assertArrayEquals(new int[] {4, 8, 2, 8, 4, 6, 6, 2}, ints);
    float[] floats = new float[7];
    for (int k = 0; k < floats.length; k++) floats[k] = bb.getFloat((int) p.floats() + 4 * k);
    // bias values, repetition, frequency, presence; then row b's 1, 0, 0
    assertArrayEquals(new float[] {-1.5f, 1.3f, 0.5f, 0.25f, 1f, 0f, 0f}, floats);
    // floats before ints, so the upload ends with the ints used
    assertEquals(p.ints() + 4 * 8, bb.capacity());
    assertEquals(p.floats() + 4 * 7, p.ints());
    // with capacities (a graph's layout): the sections' offsets depend on the row count and the
    // capacities, and only what is used goes up
    DeviceSampler.Packed q =
        DeviceSampler.pack(List.of(a, b), new int[] {7, 7}, 100, 20, ByteBuffer::allocateDirect);
    assertEquals(p.floats(), q.floats());
    assertEquals(q.floats() + 4 * 20, q.ints());
    assertEquals(q.ints() + 4 * 8, q.bytes().limit());
    assertEquals(q.ints() + 4 * 100, q.capacity());
    assertEquals(-1.5f, q.bytes().getFloat((int) q.floats()));
    assertEquals(4, q.bytes().getInt((int) q.ints()));
    assertThrows(
        IllegalArgumentException.class,
        () ->
            DeviceSampler.pack(List.of(a, b), new int[] {7, 7}, 7, 20, ByteBuffer::allocateDirect));
    assertThrows(
        IllegalArgumentException.class, () -> DeviceSampler.pack(List.of(a), new int[] {0, 1}));
    assertThrows(
        IllegalArgumentException.class,
        () ->
            new DeviceSampling.Params(
                true,
                1f,
                0,
                1f,
                0f,
                0,
                21,
                none,
                none,
                none,
                new float[0],
                1f,
                none,
                0f,
                0f,
                none,
                none));
  }

  /** A decode-only plan padded to a graph's size: the added rows touch only the scratch block. */
  @Test
  void aDecodePlanPadsToAGraphSizeThroughTheScratchBlock() {
    List<SequenceChunk> decode =
        List.of(
            new SequenceChunk(new int[] {5}, 6, new int[] {9, 4}, false, 3),
            new SequenceChunk(new int[] {1}, 0, new int[] {2}, false));
    BatchPlan p = BatchPlan.of(decode, 4, 12, 10, id -> 0);
    assertTrue(p.decodeOnly());
    BatchPlan q = p.padded(4, 12, 4);
    assertArrayEquals(new int[] {5, 1, 0, 0}, q.tokens());
    assertArrayEquals(new int[] {6, 0, 0, 0}, q.positions());
    assertArrayEquals(new int[] {18, 8, 48, 48}, q.slots()); // scratch block 12, position 0
    assertArrayEquals(new int[] {9, 4, 2, 12}, q.tables());
    assertArrayEquals(new int[] {0, 2, 3, 3}, q.tableOffsets());
    assertArrayEquals(new int[] {0, -1, -1, -1}, q.adapterSlots());
    assertArrayEquals(new int[] {0, 1, 2, 3}, q.logitRows());
    // the sections' offsets depend on the size only
    assertEquals(6 * 4, q.offTables());
    assertThrows(IllegalArgumentException.class, () -> p.padded(1, 12, 4));
    BatchPlan prefill =
        BatchPlan.of(
            List.of(new SequenceChunk(new int[] {1, 2}, 0, new int[] {2}, false)),
            4,
            12,
            10,
            id -> 0);
    assertFalse(prefill.decodeOnly());
    BatchPlan all =
        BatchPlan.of(
            List.of(new SequenceChunk(new int[] {1}, 0, new int[] {2}, true)), 4, 12, 10, id -> 0);
    assertTrue(all.decodeOnly()); // one token, one logit row: the same step
  }

  @Test
  void batchPlanPacksRowsSlotsTablesAndLogitRows() {
    List<SequenceChunk> batch =
        List.of(
            new SequenceChunk(new int[] {5, 6, 7}, 2, new int[] {9, 4, 8}, false, 3),
            new SequenceChunk(new int[] {1}, 7, new int[] {0, 2, 6}, false),
            new SequenceChunk(new int[] {2, 3}, 0, new int[] {1, 11}, true));
    BatchPlan p = BatchPlan.of(batch, 4, 12, 10, id -> id == 3 ? 0 : -9);
    assertArrayEquals(new int[] {5, 6, 7, 1, 2, 3}, p.tokens());
    assertArrayEquals(new int[] {2, 3, 4, 7, 0, 1}, p.positions());
    // position 4 of chunk 0 is block table[1] = 4, slot 0 → 16; position 7 of chunk 1: table[1] = 2
    assertArrayEquals(new int[] {38, 39, 16, 11, 4, 5}, p.slots());
    assertArrayEquals(new int[] {9, 4, 0, 2, 1}, p.tables()); // only the blocks each chunk covers
    assertArrayEquals(new int[] {0, 0, 0, 2, 4, 4}, p.tableOffsets());
    assertArrayEquals(new int[] {0, 0, 0, -1, -1, -1}, p.adapterSlots());
    assertArrayEquals(new int[] {2, 3, 4, 5}, p.logitRows());
    assertArrayEquals(new int[] {1, 1, 2}, p.logitCounts());
    assertTrue(p.anyAdapter());
    IntBuffer packed = p.pack().order(ByteOrder.LITTLE_ENDIAN).asIntBuffer();
    assertEquals(p.packedInts(), packed.remaining());
    assertEquals(38, packed.get(p.offSlots()));
    assertEquals(4, packed.get(p.offLogitRows() + 2));
    assertEquals(9, packed.get(p.offTables()));
    // errors: uncovered position, block out of range, token out of vocabulary
    assertThrows(
        IllegalArgumentException.class,
        () ->
            BatchPlan.of(
                List.of(new SequenceChunk(new int[] {1}, 8, new int[] {0, 1}, false)),
                4,
                12,
                10,
                i -> 0));
    assertThrows(
        IllegalArgumentException.class,
        () ->
            BatchPlan.of(
                List.of(new SequenceChunk(new int[] {1}, 0, new int[] {12}, false)),
                4,
                12,
                10,
                i -> 0));
    assertThrows(
        IllegalArgumentException.class,
        () ->
            BatchPlan.of(
                List.of(new SequenceChunk(new int[] {10}, 0, new int[] {0}, false)),
                4,
                12,
                10,
                i -> 0));
  }

  @Test
  void kernelSourceIsSpecialisedPerModelAndNamesEveryKernel() {
    ModelConfig q3 = TinyModels.config(Arch.QWEN3), q2 = TinyModels.config(Arch.QWEN2);
    String s = KernelSource.generate(q3, 16);
    assertTrue(s.contains("#define HEAD_DIM 16\n"));
    assertTrue(s.contains("#define GROUP 2\n"));
    assertTrue(s.contains("#define KV_BLOCK 16\n"));
    assertTrue(s.contains("#define HAS_QK_NORM 1\n"));
    assertTrue(s.contains("#define HAS_QKV_BIAS 0\n"));
    assertTrue(KernelSource.generate(q2, 16).contains("#define HAS_QKV_BIAS 1\n"));
    for (String k : KernelSource.KERNELS)
      assertTrue(s.contains("extern \"C\" __global__ void " + k + "("), k);
    // attention's merge buffer fits: Llama-3-8B (32 heads / 8 KV, 128) gets 8 warps taking 4
    // positions at once, a 16-group of 256-wide heads 1 warp taking 1
    ModelConfig l8 = TinyModels.llama(128256, 4096, 1, 32, 8, 14336);
    assertEquals(8, KernelSource.attentionWarps(l8));
    assertEquals(4, KernelSource.attentionPositions(l8));
    assertTrue(KernelSource.generate(l8, 16).contains("#define ATT_POS 4\n"));
    ModelConfig wide =
        new ModelConfig(
            "LlamaForCausalLM",
            10,
            4096,
            8,
            1,
            16,
            1,
            256,
            64,
            1e-6,
            1e4,
            null,
            false,
            false,
            false,
            null,
            List.of(),
            0);
    assertEquals(1, KernelSource.attentionWarps(wide));
    assertEquals(1, KernelSource.attentionPositions(wide));
    ModelConfig tooWide =
        new ModelConfig(
            "LlamaForCausalLM",
            10,
            16384,
            8,
            1,
            64,
            1,
            256,
            64,
            1e-6,
            1e4,
            null,
            false,
            false,
            false,
            null,
            List.of(),
            0);
    assertThrows(IllegalArgumentException.class, () -> KernelSource.generate(tooWide, 16));
  }

  @Test
  void bf16RoundsToNearestEvenLikeTorch() {
    assertEquals(1.0f, Bf16.round(1.0f));
    // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0); 1 + 3·2^-8 rounds up
    assertEquals(1.0f, Bf16.round(1.0f + 0x1p-8f));
    assertEquals(1.0f + 0x1p-6f, Bf16.round(1.0f + 3 * 0x1p-8f));
    assertTrue(Float.isNaN(Bf16.round(Float.NaN)));
    assertEquals(Float.POSITIVE_INFINITY, Bf16.round(Float.POSITIVE_INFINITY));
    Random r = new Random(3);
    for (int i = 0; i < 100_000; i++) {
      float f = (float) (r.nextGaussian() * Math.pow(10, r.nextInt(20) - 10));
      float g = Bf16.round(f);
      assertEquals(g, DType.bf16ToFloat(Bf16.fromFloat(f)));
      assertTrue(Math.abs(g - f) <= Math.abs(f) * 0x1p-8f, f + " → " + g);
    }
  }

  private static CudaProbe.Result probe(CudaProbe.Device... d) {
    return new CudaProbe.Result(List.of(d), null, 13000);
  }

  @Test
  void deviceChoiceFollowsTheFlagAndNamesWhatIsMissing() {
    CudaProbe.Result none =
        new CudaProbe.Result(
            List.of(), "no usable GPU: libcuda.so.1 (the NVIDIA driver) not found", 0);
    CudaProbe.Device h100 = new CudaProbe.Device(0, "NVIDIA H100", 9, 0, 80L << 30);
    CudaProbe.Device h200 = new CudaProbe.Device(1, "NVIDIA H200", 9, 0, 141L << 30);
    CudaProbe.Device t4 = new CudaProbe.Device(0, "Tesla T4", 7, 5, 16L << 30);
    DeviceSettings auto = new DeviceSettings("auto", 0.9, "auto");
    Devices.Choice c = Devices.choose(auto, none);
    assertFalse(c.cuda());
    assertTrue(c.why().contains("CPU, because no usable GPU: libcuda.so.1"), c.why());
    assertTrue(Devices.choose(auto, probe(h100)).cuda());
    // auto on a GPU machine serves on the CPU what only the CPU runner does; cuda refuses it at
    // load
    c = Devices.choose(auto.withQuantization(Quantization.Q8_0), probe(h100));
    assertFalse(c.cuda());
    assertTrue(c.why().contains("--quantization q8_0 runs on the CPU runner only"), c.why());
    c = Devices.choose(new DeviceSettings("auto", 0.9, "half"), probe(h100));
    assertFalse(c.cuda());
    assertTrue(c.why().contains("--dtype half runs on the CPU runner only"), c.why());
    assertTrue(Devices.choose(new DeviceSettings("auto", 0.9, "bfloat16"), probe(h100)).cuda());
    assertTrue(
        Devices.choose(
                new DeviceSettings("cuda", 0.9, "auto").withQuantization(Quantization.Q8_0),
                probe(h100))
            .cuda());
    assertFalse(Devices.choose(auto, probe(t4)).cuda()); // sm_75: no BF16 products
    assertTrue(Devices.choose(auto, probe(t4)).why().contains("compute capability 8.0"));
    DeviceSettings cuda = new DeviceSettings("cuda", 0.9, "auto");
    Devices.NoDeviceException e =
        assertThrows(Devices.NoDeviceException.class, () -> Devices.choose(cuda, none));
    assertEquals(
        "--device cuda: no usable GPU: libcuda.so.1 (the NVIDIA driver) not found", e.getMessage());
    // replicas spread round-robin over the GPUs
    int a = Devices.choose(cuda, probe(h100, h200)).ordinal();
    int b = Devices.choose(cuda, probe(h100, h200)).ordinal();
    assertEquals(1, a + b);
    assertEquals(
        1, Devices.choose(new DeviceSettings("cuda:1", 0.9, "auto"), probe(h100, h200)).ordinal());
    assertThrows(
        Devices.NoDeviceException.class,
        () -> Devices.choose(new DeviceSettings("cuda:2", 0.9, "auto"), probe(h100, h200)));
    assertFalse(Devices.choose(DeviceSettings.CPU, probe(h100)).cuda());
  }
}
