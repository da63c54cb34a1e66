package dev.troupe.engine.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.runner.ModelRunners;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reading safetensors (single, sharded, three dtypes) and every way a model directory can be bad.
 */
class SafetensorsWeightsTest {
  @TempDir Path tmp;

  @Test
  void halfAndBfloatDecodeKnownBitPatterns() {
    assertEquals(1.0f, DType.f16ToFloat((short) 0x3C00));
    assertEquals(-2.0f, DType.f16ToFloat((short) 0xC000));
    assertEquals(65504f, DType.f16ToFloat((short) 0x7BFF));
    assertEquals(0x1p-24f, DType.f16ToFloat((short) 0x0001));
    assertEquals(0x1p-14f, DType.f16ToFloat((short) 0x0400));
    assertEquals(Float.NEGATIVE_INFINITY, DType.f16ToFloat((short) 0xFC00));
    assertTrue(Float.isNaN(DType.f16ToFloat((short) 0x7E00)));
    assertEquals(1.0f, DType.bf16ToFloat((short) 0x3F80));
    assertEquals(-0.5f, DType.bf16ToFloat((short) 0xBF00));
    assertEquals(3.140625f, DType.bf16ToFloat((short) 0x4049));
  }

  @Test
  void readsAllDtypesSingleAndSharded() throws IOException {
    float[] v = {0f, 1f, -2.5f, 0.1f, 3.14159f, -1e-3f};
    Map<String, float[]> t = new LinkedHashMap<>();
    t.put("a", v);
    t.put("b", new float[] {7f, 8f});
    Map<String, long[]> shapes = Map.of("a", new long[] {2, 3}, "b", new long[] {2});
    for (DType dt : DType.values()) {
      Path f = tmp.resolve(dt + ".safetensors");
      TinyModels.writeSafetensors(f, t, shapes, dt);
      Path dir = Files.createDirectories(tmp.resolve(dt.name()));
      Files.move(f, dir.resolve("model.safetensors"));
      try (SafetensorsWeights w = SafetensorsWeights.open(dir)) {
        assertEquals(dt, w.info("a").dtype());
        assertTrue(w.info("a").hasShape(2, 3));
        float[] got = w.floats("a");
        for (int i = 0; i < v.length; i++) {
          float expected =
              switch (dt) {
                case F32 -> v[i];
                case BF16 -> Float.intBitsToFloat((TinyModels.toBf16(v[i]) & 0xffff) << 16);
                case F16 -> DType.f16ToFloat(TinyModels.toF16(v[i]));
              };
          assertEquals(expected, got[i], 0f);
          assertEquals(v[i], got[i], Math.abs(v[i]) * (dt == DType.BF16 ? 4e-3 : 1e-3) + 1e-7);
        }
        assertArrayEquals(new float[] {7f, 8f}, w.floats("b"));
      }
    }
    Path sharded = TinyModels.write(tmp.resolve("sharded"), Arch.QWEN2, DType.F16, 1, true);
    assertTrue(Files.exists(sharded.resolve("model.safetensors.index.json")));
    Path single = TinyModels.write(tmp.resolve("single"), Arch.QWEN2, DType.F16, 1, false);
    try (WeightSource a = SafetensorsWeights.open(sharded);
        WeightSource b = SafetensorsWeights.open(single)) {
      assertEquals(b.names(), a.names());
      for (String n : a.names()) assertArrayEquals(b.floats(n), a.floats(n), n);
    }
  }

  @Test
  void truncatedFileIsRejectedAtOpenNamingFileAndTensor() throws IOException {
    Path dir = TinyModels.write(tmp.resolve("m"), Arch.LLAMA, DType.F32, 1, false);
    Path f = dir.resolve("model.safetensors");
    try (FileChannel ch = FileChannel.open(f, StandardOpenOption.WRITE)) {
      ch.truncate(ch.size() - 10);
    }
    ModelLoadException e =
        assertThrows(ModelLoadException.class, () -> SafetensorsWeights.open(dir));
    assertTrue(e.getMessage().contains(f.toString()), e.getMessage());
    assertTrue(e.getMessage().contains("truncated"), e.getMessage());
    assertTrue(
        e.getMessage().contains("lm_head.weight") || e.getMessage().contains("model."),
        e.getMessage());
  }

  @Test
  void badHeaderIsRejected() throws IOException {
    Path dir = Files.createDirectories(tmp.resolve("bad"));
    Path f = dir.resolve("model.safetensors");
    byte[] junk = "{not json".getBytes();
    ByteBuffer b = ByteBuffer.allocate(8 + junk.length).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(junk.length).put(junk);
    Files.write(f, b.array());
    ModelLoadException e =
        assertThrows(ModelLoadException.class, () -> SafetensorsWeights.open(dir));
    assertTrue(
        e.getMessage().contains(f.toString()) && e.getMessage().contains("JSON"), e.getMessage());
    Files.write(f, ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(1L << 40).array());
    e = assertThrows(ModelLoadException.class, () -> SafetensorsWeights.open(dir));
    assertTrue(e.getMessage().contains("header length"), e.getMessage());
    assertThrows(
        ModelLoadException.class, () -> SafetensorsWeights.open(tmp.resolve("nothing-here")));
  }

  @Test
  void unsupportedDtypeFailsOnlyWhenThatTensorIsRead() throws IOException {
    Path dir = Files.createDirectories(tmp.resolve("i64"));
    byte[] header =
        ("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                + "\"step\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[4,12]}}")
            .getBytes();
    ByteBuffer b = ByteBuffer.allocate(8 + header.length + 12).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(header.length).put(header).putFloat(2.5f).putLong(7L);
    Files.write(dir.resolve("model.safetensors"), b.array());
    try (SafetensorsWeights w = SafetensorsWeights.open(dir)) {
      assertArrayEquals(new float[] {2.5f}, w.floats("a"));
      ModelLoadException e = assertThrows(ModelLoadException.class, () -> w.floats("step"));
      assertTrue(e.getMessage().contains("step") && e.getMessage().contains("I64"), e.getMessage());
    }
  }

  @Test
  void missingTensorIsRejectedNamingIt() throws IOException {
    ModelConfig c = TinyModels.config(Arch.LLAMA);
    Map<String, float[]> w = TinyModels.randomWeights(c, 1);
    w.remove("model.layers.1.mlp.up_proj.weight");
    Path dir = TinyModels.write(tmp.resolve("m"), c, w, DType.F32, false);
    ModelLoadException e =
        assertThrows(ModelLoadException.class, () -> ModelRunners.open(dir, 4, 4));
    assertTrue(e.getMessage().contains("model.layers.1.mlp.up_proj.weight"), e.getMessage());
    assertTrue(e.getMessage().contains(dir.toString()), e.getMessage());
  }

  @Test
  void misShapedTensorIsRejectedNamingFileAndTensor() throws IOException {
    ModelConfig c = TinyModels.config(Arch.QWEN3);
    Map<String, float[]> w = TinyModels.randomWeights(c, 1);
    Path dir = TinyModels.write(tmp.resolve("m"), c, w, DType.F32, true);
    // rewrite the shard holding k_norm with a transposed-looking shape for q_proj
    Map<String, long[]> shapes = new LinkedHashMap<>(TransformerLayout.of(c).tensors());
    shapes.put("model.layers.0.self_attn.q_proj.weight", new long[] {32, 64});
    Path shard = dir.resolve("model-00001-of-00002.safetensors");
    Map<String, float[]> first = new LinkedHashMap<>();
    try (SafetensorsWeights s = SafetensorsWeights.open(dir)) {
      for (String n : s.names())
        if (s.info(n).origin().equals(shard.toString())) first.put(n, s.floats(n));
    }
    assertTrue(first.containsKey("model.layers.0.self_attn.q_proj.weight"));
    TinyModels.writeSafetensors(shard, first, shapes, DType.F32);
    ModelLoadException e =
        assertThrows(ModelLoadException.class, () -> ModelRunners.open(dir, 4, 4));
    assertTrue(e.getMessage().contains("model.layers.0.self_attn.q_proj.weight"), e.getMessage());
    assertTrue(e.getMessage().contains(shard.toString()), e.getMessage());
    assertTrue(e.getMessage().contains("[32, 64]"), e.getMessage());
  }

  @Test
  void indexPointingAtAFileWithoutTheTensorIsRejected() throws IOException {
    Path dir = TinyModels.write(tmp.resolve("m"), Arch.LLAMA, DType.BF16, 1, true);
    Path index = dir.resolve("model.safetensors.index.json");
    String s = Files.readString(index);
    Files.writeString(
        index,
        s.replace(
            "\"model.norm.weight\": \"model-00002-of-00002.safetensors\"",
            "\"model.norm.weight\": \"model-00001-of-00002.safetensors\""));
    ModelLoadException e =
        assertThrows(ModelLoadException.class, () -> SafetensorsWeights.open(dir));
    assertTrue(e.getMessage().contains("model.norm.weight"), e.getMessage());
    assertTrue(e.getMessage().contains("model-00001-of-00002.safetensors"), e.getMessage());
  }
}
