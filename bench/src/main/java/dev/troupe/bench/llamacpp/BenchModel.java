package dev.troupe.bench.llamacpp;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.RandomWeights;
import dev.troupe.engine.model.RoundedWeights;
import dev.troupe.engine.model.SafetensorsWeights;
import dev.troupe.engine.model.SafetensorsWriter;
import dev.troupe.engine.model.TransformerLayout;
import dev.troupe.engine.model.WeightSource;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A benchmark model on disk twice from the same seeded random weights: a Hugging Face directory
 * (config.json with {@code torch_dtype: bfloat16}, BF16 {@code model.safetensors}, the Llama 3
 * tokenizer with a chat template that renders {@code <bos>} + the user message, so a chat request's
 * prompt is exactly BOS + its text's tokens) for Troupe, and {@code model.gguf} (the same BF16
 * values in F16, llama.cpp's RoPE order) for llama.cpp.
 */
public record BenchModel(String name, ModelConfig config, Path dir) {
  static final int VOCAB = 128256;

  /**
   * The bench sizes: {@code small} (hidden 512, 8 layers, 298 MB BF16), {@code medium} (hidden
   * 1024, 16 layers, 861 MB) and {@code large} (hidden 2048, 16 layers, 16/8 heads, intermediate
   * 5632: 1.28 B parameters, 2.56 GB), all with Llama 3's 128,256-token vocabulary and an untied LM
   * head.
   */
  public static BenchModel size(String size, Path root) {
    return switch (size) {
      case "small" -> of("small", 512, 8, 8, 4, 1536, root);
      case "medium" -> of("medium", 1024, 16, 16, 8, 2816, root);
      case "large" -> of("large", 2048, 16, 16, 8, 5632, root);
      default -> throw new IllegalArgumentException("size " + size + ": small, medium or large");
    };
  }

  static BenchModel of(
      String name, int hidden, int layers, int heads, int kvHeads, int inter, Path root) {
    ModelConfig c =
        new ModelConfig(
            "LlamaForCausalLM",
            VOCAB,
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
            128000,
            List.of(128001),
            0);
    return new BenchModel(name, c, root.resolve(name));
  }

  Path gguf() {
    return dir.resolve("model.gguf");
  }

  /**
   * The same weights as a BF16 GGUF ({@code model-bf16.gguf}: the safetensors' values verbatim),
   * written unless already there.
   */
  Path ggufBf16(Path tokenizerDir) throws IOException {
    Path f = dir.resolve("model-bf16.gguf");
    if (Files.isRegularFile(f)) return f;
    ensureSafetensors(tokenizerDir);
    Path part = f.resolveSibling("model-bf16.gguf.part");
    try (WeightSource written = SafetensorsWeights.open(dir)) {
      GgufWriter.write(
          part,
          config,
          written,
          tokenizerDir.resolve("tokenizer.json"),
          "troupe-bench-" + name,
          DType.BF16);
    }
    Files.move(part, f, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    return f;
  }

  /**
   * Writes both forms unless already there; {@code tokenizerDir} holds Llama 3's tokenizer files.
   */
  void ensureWritten(Path tokenizerDir) throws IOException {
    if (Files.isRegularFile(gguf())) return;
    ensureSafetensors(tokenizerDir);
    // from the file just written (the same BF16 values, read row by row far faster than the
    // random source regenerates its blocks); written aside and moved in place: an interrupted run
    // leaves no half file that looks done
    Path part = gguf().resolveSibling("model.gguf.part");
    try (WeightSource written = SafetensorsWeights.open(dir)) {
      GgufWriter.write(
          part, config, written, tokenizerDir.resolve("tokenizer.json"), "troupe-bench-" + name);
    }
    Files.move(part, gguf(), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  /**
   * Writes the Hugging Face directory (config, tokenizer, BF16 safetensors) unless already there,
   * without the GGUF: what Troupe alone needs.
   */
  public void ensureSafetensors(Path tokenizerDir) throws IOException {
    Path st = dir.resolve("model.safetensors");
    if (Files.isRegularFile(st)) return;
    Files.createDirectories(dir);
    WeightSource w =
        RoundedWeights.of(new RandomWeights(config, 7L, 0.02, "bench " + name), DType.BF16);
    ObjectMapper json = new ObjectMapper();
    ObjectNode cfg = json.createObjectNode();
    cfg.putArray("architectures").add("LlamaForCausalLM");
    cfg.put("model_type", "llama");
    cfg.put("hidden_act", "silu");
    cfg.put("vocab_size", config.vocabSize());
    cfg.put("hidden_size", config.hiddenSize());
    cfg.put("intermediate_size", config.intermediateSize());
    cfg.put("num_hidden_layers", config.numLayers());
    cfg.put("num_attention_heads", config.numHeads());
    cfg.put("num_key_value_heads", config.numKvHeads());
    cfg.put("max_position_embeddings", config.maxPositionEmbeddings());
    cfg.put("rms_norm_eps", config.rmsNormEps());
    cfg.put("rope_theta", config.ropeTheta());
    cfg.put("tie_word_embeddings", false);
    cfg.put("bos_token_id", config.bosTokenId());
    cfg.put("eos_token_id", config.eosTokenIds().get(0));
    cfg.put("torch_dtype", "bfloat16");
    json.writerWithDefaultPrettyPrinter().writeValue(dir.resolve("config.json").toFile(), cfg);
    Files.copy(
        tokenizerDir.resolve("tokenizer.json"),
        dir.resolve("tokenizer.json"),
        StandardCopyOption.REPLACE_EXISTING);
    ObjectNode tc =
        (ObjectNode) json.readTree(tokenizerDir.resolve("tokenizer_config.json").toFile());
    tc.put("chat_template", "{{ bos_token }}{{ messages[0]['content'] }}");
    json.writeValue(dir.resolve("tokenizer_config.json").toFile(), tc);
    List<String> names = new ArrayList<>(TransformerLayout.of(config).tensors().keySet());
    Path part = st.resolveSibling("model.safetensors.part");
    SafetensorsWriter.write(part, w, names, DType.BF16, Map.of("format", "pt"));
    Files.move(part, st, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  public long safetensorsBytes() {
    return dir.resolve("model.safetensors").toFile().length();
  }
}
