package dev.troupe.bench.llamacpp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.Projection;
import dev.troupe.engine.model.TransformerLayout;
import dev.troupe.engine.model.WeightSource;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes a Llama model as a GGUF v3 file llama.cpp loads: F16 or BF16 matrices and F32 norms, in
 * llama.cpp's tensor names, with the Llama 3 BPE vocabulary of a Hugging Face {@code
 * tokenizer.json}. What {@code convert_hf_to_gguf.py} does for Llama, for the benchmark's random
 * models: q and k rows are permuted from Hugging Face's rotate-half order to llama.cpp's
 * interleaved RoPE pairs, so both engines compute the same function.
 *
 * <p>Format (ggml's gguf.md): magic {@code GGUF}, version 3, tensor and key/value counts, the
 * key/values, the tensor infos (name, dims fastest first, type, offset), then the data, every
 * tensor aligned to 32 bytes.
 */
public final class GgufWriter {
  private static final int ALIGN = 32;
  private static final int GGML_F32 = 0, GGML_F16 = 1, GGML_BF16 = 30;
  private static final int T_UINT32 = 4, T_INT32 = 5, T_FLOAT32 = 6, T_BOOL = 7, T_STRING = 8;
  private static final int T_ARRAY = 9;

  private GgufWriter() {}

  /** One tensor to write: GGUF name, source name, dims fastest first, F16 or F32, q/k heads. */
  private record Entry(String name, String source, long[] dims, int type, int permuteHeads) {
    long bytes() {
      long n = 1;
      for (long d : dims) n *= d;
      return n * (type == GGML_F32 ? 4 : 2);
    }
  }

  /** Writes {@code weights} of Llama config {@code c} with the vocabulary of {@code tokenizer}. */
  public static void write(
      Path file, ModelConfig c, WeightSource weights, Path tokenizer, String name)
      throws IOException {
    write(file, c, weights, tokenizer, name, DType.F16);
  }

  /** As {@link #write(Path, ModelConfig, WeightSource, Path, String)}, matrices in F16 or BF16. */
  public static void write(
      Path file, ModelConfig c, WeightSource weights, Path tokenizer, String name, DType matrices)
      throws IOException {
    if (matrices != DType.F16 && matrices != DType.BF16)
      throw new IllegalArgumentException("GGUF matrices are F16 or BF16, not " + matrices);
    int mt = matrices == DType.BF16 ? GGML_BF16 : GGML_F16;
    TransformerLayout layout = TransformerLayout.of(c);
    List<Entry> tensors = new ArrayList<>();
    long h = c.hiddenSize();
    tensors.add(
        new Entry(
            "token_embd.weight", TransformerLayout.EMBED, new long[] {h, c.vocabSize()}, mt, 0));
    for (TransformerLayout.LayerTensors t : layout.layers()) {
      String b = "blk." + t.index() + ".";
      tensors.add(new Entry(b + "attn_norm.weight", t.inputNorm(), new long[] {h}, GGML_F32, 0));
      tensors.add(matrix(b + "attn_q.weight", t, Projection.Q, c, c.numHeads(), mt));
      tensors.add(matrix(b + "attn_k.weight", t, Projection.K, c, c.numKvHeads(), mt));
      tensors.add(matrix(b + "attn_v.weight", t, Projection.V, c, 0, mt));
      tensors.add(matrix(b + "attn_output.weight", t, Projection.O, c, 0, mt));
      tensors.add(new Entry(b + "ffn_norm.weight", t.postNorm(), new long[] {h}, GGML_F32, 0));
      tensors.add(matrix(b + "ffn_gate.weight", t, Projection.GATE, c, 0, mt));
      tensors.add(matrix(b + "ffn_up.weight", t, Projection.UP, c, 0, mt));
      tensors.add(matrix(b + "ffn_down.weight", t, Projection.DOWN, c, 0, mt));
    }
    tensors.add(
        new Entry("output_norm.weight", TransformerLayout.FINAL_NORM, new long[] {h}, GGML_F32, 0));
    if (!c.tieWordEmbeddings())
      tensors.add(
          new Entry(
              "output.weight", TransformerLayout.LM_HEAD, new long[] {h, c.vocabSize()}, mt, 0));

    Map<String, Object> kv = new LinkedHashMap<>();
    kv.put("general.architecture", "llama");
    kv.put("general.name", name);
    kv.put("general.file_type", new U32(mt == GGML_BF16 ? 32 : 1)); // MOSTLY_BF16 : MOSTLY_F16
    kv.put("general.alignment", new U32(ALIGN));
    kv.put("llama.vocab_size", new U32(c.vocabSize()));
    kv.put("llama.context_length", new U32(c.maxPositionEmbeddings()));
    kv.put("llama.embedding_length", new U32(c.hiddenSize()));
    kv.put("llama.block_count", new U32(c.numLayers()));
    kv.put("llama.feed_forward_length", new U32(c.intermediateSize()));
    kv.put("llama.attention.head_count", new U32(c.numHeads()));
    kv.put("llama.attention.head_count_kv", new U32(c.numKvHeads()));
    kv.put("llama.rope.dimension_count", new U32(c.headDim()));
    kv.put("llama.rope.freq_base", (float) c.ropeTheta());
    kv.put("llama.attention.layer_norm_rms_epsilon", (float) c.rmsNormEps());
    Vocab v = Vocab.read(tokenizer, c.vocabSize());
    kv.put("tokenizer.ggml.model", "gpt2");
    kv.put("tokenizer.ggml.pre", "llama-bpe");
    kv.put("tokenizer.ggml.tokens", v.tokens());
    kv.put("tokenizer.ggml.token_type", v.types());
    kv.put("tokenizer.ggml.merges", v.merges());
    kv.put("tokenizer.ggml.bos_token_id", new U32(c.bosTokenId()));
    kv.put("tokenizer.ggml.eos_token_id", new U32(c.eosTokenIds().get(0)));
    kv.put("tokenizer.ggml.add_bos_token", Boolean.TRUE);

    try (OutputStream os = new BufferedOutputStream(Files.newOutputStream(file), 1 << 20)) {
      Out out = new Out(os);
      out.bytes("GGUF".getBytes(StandardCharsets.US_ASCII));
      out.u32(3);
      out.u64(tensors.size());
      out.u64(kv.size());
      for (Map.Entry<String, Object> e : kv.entrySet()) {
        out.string(e.getKey());
        out.value(e.getValue());
      }
      long offset = 0;
      for (Entry t : tensors) {
        out.string(t.name());
        out.u32(t.dims().length);
        for (long d : t.dims()) out.u64(d);
        out.u32(t.type());
        out.u64(offset);
        offset += pad(t.bytes());
      }
      out.pad();
      for (Entry t : tensors) {
        writeData(out, weights, t);
        out.pad();
      }
    }
  }

  private static Entry matrix(
      String name,
      TransformerLayout.LayerTensors t,
      Projection p,
      ModelConfig c,
      int heads,
      int mt) {
    return new Entry(name, t.weight(p), new long[] {p.in(c), p.out(c)}, mt, heads);
  }

  private static long pad(long n) {
    return (n + ALIGN - 1) / ALIGN * ALIGN;
  }

  /** Rows of the tensor (in the permuted order for q/k), converted to F16 or F32. */
  private static void writeData(Out out, WeightSource w, Entry t) throws IOException {
    int in = (int) t.dims()[0];
    int rows = t.dims().length == 1 ? 1 : (int) t.dims()[1];
    float[] row = new float[in];
    ByteBuffer b = ByteBuffer.allocate(in * 4).order(ByteOrder.LITTLE_ENDIAN);
    int headDim = t.permuteHeads() > 0 ? rows / t.permuteHeads() : 0;
    for (int r = 0; r < rows; r++) {
      // llama.cpp's row r of a head holds Hugging Face's row (r%2)·D/2 + r/2 of that head
      int src = r;
      if (headDim > 0) {
        int head = r / headDim, j = r % headDim;
        src = head * headDim + (j % 2) * (headDim / 2) + j / 2;
      }
      w.copyTo(t.source(), (long) src * in, in, FloatBuffer.wrap(row));
      b.clear();
      for (float f : row) {
        if (t.type() == GGML_F16) b.putShort(DType.floatToF16(f));
        else if (t.type() == GGML_BF16) b.putShort(DType.floatToBf16(f));
        else b.putFloat(f);
      }
      out.bytes(b.array(), b.position());
    }
  }

  /** The vocabulary in GGUF's form: id-ordered token strings, token types, merges. */
  private record Vocab(List<String> tokens, int[] types, List<String> merges) {
    static Vocab read(Path tokenizerJson, int vocabSize) throws IOException {
      JsonNode t = new ObjectMapper().readTree(tokenizerJson.toFile());
      String[] tokens = new String[vocabSize];
      int[] types = new int[vocabSize];
      t.path("model")
          .path("vocab")
          .properties()
          .forEach(
              e -> {
                int id = e.getValue().asInt();
                if (id < vocabSize) {
                  tokens[id] = e.getKey();
                  types[id] = 1; // normal
                }
              });
      for (JsonNode a : t.path("added_tokens")) {
        int id = a.path("id").asInt();
        if (id < vocabSize) {
          tokens[id] = a.path("content").asText();
          types[id] = a.path("special").asBoolean() ? 3 : 4; // control : user defined
        }
      }
      for (int i = 0; i < vocabSize; i++)
        if (tokens[i] == null) {
          tokens[i] = "[PAD" + i + "]";
          types[i] = 5; // unused
        }
      List<String> merges = new ArrayList<>();
      for (JsonNode m : t.path("model").path("merges"))
        merges.add(m.isArray() ? m.get(0).asText() + " " + m.get(1).asText() : m.asText());
      return new Vocab(List.of(tokens), types, merges);
    }
  }

  private record U32(long v) {}

  /** Little-endian GGUF primitives, tracking the position for alignment. */
  private static final class Out {
    private final OutputStream os;
    private final ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
    private long pos;

    Out(OutputStream os) {
      this.os = os;
    }

    void bytes(byte[] a) throws IOException {
      bytes(a, a.length);
    }

    void bytes(byte[] a, int n) throws IOException {
      os.write(a, 0, n);
      pos += n;
    }

    void u32(long v) throws IOException {
      b.clear();
      b.putInt((int) v);
      bytes(b.array(), 4);
    }

    void u64(long v) throws IOException {
      b.clear();
      b.putLong(v);
      bytes(b.array(), 8);
    }

    void f32(float v) throws IOException {
      b.clear();
      b.putFloat(v);
      bytes(b.array(), 4);
    }

    void string(String s) throws IOException {
      byte[] a = s.getBytes(StandardCharsets.UTF_8);
      u64(a.length);
      bytes(a);
    }

    void pad() throws IOException {
      while (pos % ALIGN != 0) bytes(new byte[] {0}, 1);
    }

    @SuppressWarnings("unchecked")
    void value(Object v) throws IOException {
      if (v instanceof String s) {
        u32(T_STRING);
        string(s);
      } else if (v instanceof U32 u) {
        u32(T_UINT32);
        u32(u.v());
      } else if (v instanceof Float f) {
        u32(T_FLOAT32);
        f32(f);
      } else if (v instanceof Boolean z) {
        u32(T_BOOL);
        bytes(new byte[] {(byte) (z ? 1 : 0)}, 1);
      } else if (v instanceof int[] a) {
        u32(T_ARRAY);
        u32(T_INT32);
        u64(a.length);
        for (int x : a) u32(x);
      } else if (v instanceof List<?> l) {
        u32(T_ARRAY);
        u32(T_STRING);
        u64(l.size());
        for (String s : (List<String>) l) string(s);
      } else throw new IllegalArgumentException("no GGUF type for " + v);
    }
  }
}
