package dev.troupe.engine.testing;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.TransformerLayout;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * Writes tiny random Hugging Face model directories ({@code config.json} + safetensors in F32, BF16
 * or F16, optionally sharded with an index) for every supported architecture. Deterministic per
 * seed. Test-jar helper, also used by benchmarks.
 */
public final class TinyModels {

  /** The architectures (and variants) the engine supports. */
  public enum Arch {
    LLAMA("LlamaForCausalLM"),
    LLAMA3_SCALED("LlamaForCausalLM"),
    MISTRAL("MistralForCausalLM"),
    QWEN2("Qwen2ForCausalLM"),
    QWEN3("Qwen3ForCausalLM");

    public final String hfName;

    Arch(String hfName) {
      this.hfName = hfName;
    }
  }

  private TinyModels() {}

  /** A tiny config of {@code arch}: vocab 97, hidden 32, 2 layers, 4 heads / 2 KV heads. */
  public static ModelConfig config(Arch arch) {
    boolean qwen3 = arch == Arch.QWEN3;
    return new ModelConfig(
        arch.hfName,
        97,
        32,
        48,
        2,
        4,
        2,
        qwen3 ? 16 : 8, // Qwen3: explicit head_dim != hidden / heads
        128,
        1e-6,
        arch == Arch.QWEN2 || qwen3 ? 1_000_000.0 : 10_000.0,
        arch == Arch.LLAMA3_SCALED
            ? new ModelConfig.RopeScaling("llama3", 8.0, 1.0, 4.0, 16)
            : null,
        qwen3 || arch == Arch.QWEN2,
        arch == Arch.QWEN2,
        qwen3,
        1,
        List.of(2),
        0);
  }

  /** {@code c} with Mistral's {@code sliding_window} set to {@code window}. */
  public static ModelConfig withSlidingWindow(ModelConfig c, int window) {
    return with(c, c.maxPositionEmbeddings(), window);
  }

  /** {@code c} with room for {@code positions} positions (tests of long contexts). */
  public static ModelConfig withMaxPositions(ModelConfig c, int positions) {
    return with(c, positions, c.slidingWindow());
  }

  private static ModelConfig with(ModelConfig c, int positions, int window) {
    return new ModelConfig(
        c.architecture(),
        c.vocabSize(),
        c.hiddenSize(),
        c.intermediateSize(),
        c.numLayers(),
        c.numHeads(),
        c.numKvHeads(),
        c.headDim(),
        positions,
        c.rmsNormEps(),
        c.ropeTheta(),
        c.ropeScaling(),
        c.tieWordEmbeddings(),
        c.attentionBias(),
        c.qkNorm(),
        c.bosTokenId(),
        c.eosTokenIds(),
        window);
  }

  /** A config with explicit sizes (benchmarks): Llama layout, untied. */
  public static ModelConfig llama(
      int vocab, int hidden, int layers, int heads, int kvHeads, int inter) {
    return new ModelConfig(
        "LlamaForCausalLM",
        vocab,
        hidden,
        inter,
        layers,
        heads,
        kvHeads,
        hidden / heads,
        8192,
        1e-5,
        500_000.0,
        null,
        false,
        false,
        false,
        1,
        List.of(2),
        0);
  }

  /** Random weights for {@code c}: N(0, 0.1²) matrices, norms 1 + N(0, 0.1²), biases N(0, 0.1²). */
  public static Map<String, float[]> randomWeights(ModelConfig c, long seed) {
    Random r = new Random(seed);
    Map<String, float[]> m = new LinkedHashMap<>();
    for (Map.Entry<String, long[]> e : TransformerLayout.of(c).tensors().entrySet()) {
      long n = 1;
      for (long d : e.getValue()) n *= d;
      float[] v = new float[(int) n];
      boolean norm = e.getKey().endsWith("norm.weight");
      for (int i = 0; i < v.length; i++) v[i] = (float) ((norm ? 1 : 0) + 0.1 * r.nextGaussian());
      m.put(e.getKey(), v);
    }
    return m;
  }

  /** Writes a random model of {@code arch} into {@code dir} (created) and returns {@code dir}. */
  public static Path write(Path dir, Arch arch, DType dtype, long seed, boolean sharded)
      throws IOException {
    ModelConfig c = config(arch);
    return write(dir, c, randomWeights(c, seed), dtype, sharded);
  }

  /** Writes {@code config.json} and the weights; sharded: two files plus the index. */
  public static Path write(
      Path dir, ModelConfig c, Map<String, float[]> weights, DType dtype, boolean sharded)
      throws IOException {
    Files.createDirectories(dir);
    Files.writeString(dir.resolve("config.json"), configJson(c, dtype));
    Map<String, long[]> shapes = TransformerLayout.of(c).tensors();
    if (!sharded) {
      writeSafetensors(dir.resolve("model.safetensors"), weights, shapes, dtype);
      return dir;
    }
    List<String> names = new ArrayList<>(weights.keySet());
    Map<String, float[]> first = new LinkedHashMap<>(), second = new LinkedHashMap<>();
    for (int i = 0; i < names.size(); i++)
      (i < names.size() / 2 ? first : second).put(names.get(i), weights.get(names.get(i)));
    String f1 = "model-00001-of-00002.safetensors", f2 = "model-00002-of-00002.safetensors";
    writeSafetensors(dir.resolve(f1), first, shapes, dtype);
    writeSafetensors(dir.resolve(f2), second, shapes, dtype);
    StringBuilder idx = new StringBuilder("{\"metadata\": {}, \"weight_map\": {");
    String sep = "";
    for (String n : names) {
      idx.append(sep)
          .append('"')
          .append(n)
          .append("\": \"")
          .append(first.containsKey(n) ? f1 : f2)
          .append('"');
      sep = ", ";
    }
    Files.writeString(dir.resolve("model.safetensors.index.json"), idx.append("}}").toString());
    return dir;
  }

  /** A Hugging Face style {@code config.json} for {@code c}, {@code torch_dtype} float32. */
  public static String configJson(ModelConfig c) {
    return configJson(c, DType.F32);
  }

  /** A Hugging Face style {@code config.json} for {@code c} stored in {@code dtype}. */
  public static String configJson(ModelConfig c, DType dtype) {
    StringBuilder s = new StringBuilder("{\n");
    s.append("  \"architectures\": [\"").append(c.architecture()).append("\"],\n");
    s.append("  \"model_type\": \"")
        .append(c.architecture().replace("ForCausalLM", "").toLowerCase(Locale.ROOT))
        .append("\",\n");
    s.append("  \"hidden_act\": \"silu\",\n");
    s.append("  \"vocab_size\": ").append(c.vocabSize()).append(",\n");
    s.append("  \"hidden_size\": ").append(c.hiddenSize()).append(",\n");
    s.append("  \"intermediate_size\": ").append(c.intermediateSize()).append(",\n");
    s.append("  \"num_hidden_layers\": ").append(c.numLayers()).append(",\n");
    s.append("  \"num_attention_heads\": ").append(c.numHeads()).append(",\n");
    s.append("  \"num_key_value_heads\": ").append(c.numKvHeads()).append(",\n");
    s.append("  \"head_dim\": ").append(c.headDim()).append(",\n");
    s.append("  \"max_position_embeddings\": ").append(c.maxPositionEmbeddings()).append(",\n");
    s.append("  \"rms_norm_eps\": ").append(c.rmsNormEps()).append(",\n");
    s.append("  \"rope_theta\": ").append(c.ropeTheta()).append(",\n");
    if (c.ropeScaling() != null) {
      ModelConfig.RopeScaling r = c.ropeScaling();
      s.append(
          String.format(
              Locale.ROOT,
              "  \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": %s, \"low_freq_factor\": %s, "
                  + "\"high_freq_factor\": %s, \"original_max_position_embeddings\": %d},\n",
              r.factor(),
              r.lowFreqFactor(),
              r.highFreqFactor(),
              r.originalMaxPositionEmbeddings()));
    }
    s.append("  \"tie_word_embeddings\": ").append(c.tieWordEmbeddings()).append(",\n");
    if (c.slidingWindow() > 0)
      s.append("  \"sliding_window\": ").append(c.slidingWindow()).append(",\n");
    if (c.bosTokenId() != null)
      s.append("  \"bos_token_id\": ").append(c.bosTokenId()).append(",\n");
    s.append("  \"eos_token_id\": ")
        .append(c.eosTokenIds().isEmpty() ? "null" : c.eosTokenIds().get(0))
        .append(",\n");
    String torch =
        switch (dtype) {
          case F32 -> "float32";
          case BF16 -> "bfloat16";
          case F16 -> "float16";
        };
    s.append("  \"torch_dtype\": \"").append(torch).append("\"\n}\n");
    return s.toString();
  }

  /** Writes one safetensors file (header padded to 8 bytes, as the reference writer does). */
  public static void writeSafetensors(
      Path file, Map<String, float[]> tensors, Map<String, long[]> shapes, DType dtype)
      throws IOException {
    String code = dtype.name();
    StringBuilder h = new StringBuilder("{\"__metadata__\":{\"format\":\"pt\"}");
    long off = 0;
    for (Map.Entry<String, float[]> e : tensors.entrySet()) {
      long[] shape = shapes.get(e.getKey());
      if (shape == null) shape = new long[] {e.getValue().length};
      long len = (long) e.getValue().length * dtype.bytes();
      h.append(",\"")
          .append(e.getKey())
          .append("\":{\"dtype\":\"")
          .append(code)
          .append("\",\"shape\":[");
      for (int i = 0; i < shape.length; i++) h.append(i == 0 ? "" : ",").append(shape[i]);
      h.append("],\"data_offsets\":[").append(off).append(',').append(off + len).append("]}");
      off += len;
    }
    h.append('}');
    while ((h.length() + 8) % 8 != 0) h.append(' ');
    byte[] header = h.toString().getBytes(StandardCharsets.UTF_8);
    try (OutputStream out = Files.newOutputStream(file)) {
      out.write(
          ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(header.length).array());
      out.write(header);
      for (float[] v : tensors.values()) {
        ByteBuffer b = ByteBuffer.allocate(v.length * dtype.bytes()).order(ByteOrder.LITTLE_ENDIAN);
        for (float f : v) {
          switch (dtype) {
            case F32 -> b.putFloat(f);
            case BF16 -> b.putShort(toBf16(f));
            case F16 -> b.putShort(toF16(f));
          }
        }
        out.write(b.array());
      }
    }
  }

  /** float to bfloat16, round to nearest even. */
  public static short toBf16(float f) {
    int b = Float.floatToIntBits(f);
    b += 0x7fff + ((b >>> 16) & 1);
    return (short) (b >>> 16);
  }

  /** float to IEEE half, round to nearest even (finite inputs). */
  public static short toF16(float f) {
    int b = Float.floatToIntBits(f);
    int sign = (b >>> 16) & 0x8000;
    int exp = ((b >>> 23) & 0xff) - 127 + 15;
    int mant = b & 0x7fffff;
    if (exp >= 31) return (short) (sign | 0x7c00);
    if (exp <= 0) {
      if (exp < -10) return (short) sign;
      mant |= 0x800000;
      int shift = 14 - exp;
      int half = mant >> shift, rem = mant & ((1 << shift) - 1), mid = 1 << (shift - 1);
      if (rem > mid || (rem == mid && (half & 1) == 1)) half++;
      return (short) (sign | half);
    }
    int half = (exp << 10) | (mant >> 13), rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1) == 1)) half++;
    return (short) (sign | half);
  }
}
