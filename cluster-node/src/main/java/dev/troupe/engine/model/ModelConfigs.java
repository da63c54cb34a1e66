package dev.troupe.engine.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.troupe.engine.ModelConfig;
import dev.troupe.protocol.cluster.SamplingDefaults;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Reads a Hugging Face {@code config.json} (plus {@code generation_config.json} for end-of-sequence
 * ids) into a {@link ModelConfig}. Defaults follow transformers' config classes for the supported
 * architectures; anything we cannot run faithfully is rejected here, not discovered later.
 */
public final class ModelConfigs {
  public static final Set<String> SUPPORTED =
      Set.of("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM");
  private static final ObjectMapper JSON = new ObjectMapper();

  private ModelConfigs() {}

  /** Reads {@code dir/config.json} and, if present, {@code dir/generation_config.json}. */
  public static ModelConfig read(Path dir) {
    Path file = dir.resolve("config.json");
    if (!Files.isRegularFile(file))
      throw new ModelLoadException("no config.json in " + dir.toAbsolutePath());
    JsonNode c = readJson(file);
    List<Integer> eos = new ArrayList<>();
    Path gen = dir.resolve("generation_config.json");
    if (Files.isRegularFile(gen)) eos.addAll(ids(readJson(gen).get("eos_token_id")));
    eos.addAll(ids(c.get("eos_token_id")));
    try {
      return parse(c, List.copyOf(new LinkedHashSet<>(eos)));
    } catch (IllegalArgumentException e) {
      throw new ModelLoadException(file + ": " + e.getMessage(), e);
    }
  }

  /**
   * The checkpoint's own dtype: config.json's {@code torch_dtype} (or {@code dtype}, its newer
   * name), null when absent or not a float dtype we serve.
   */
  public static DType torchDType(Path dir) {
    Path file = dir.resolve("config.json");
    if (!Files.isRegularFile(file)) return null;
    JsonNode c = readJson(file);
    JsonNode t = c.hasNonNull("torch_dtype") ? c.get("torch_dtype") : c.get("dtype");
    return t == null || !t.isTextual() ? null : ServedDType.fromTorch(t.asText());
  }

  /**
   * The sampling defaults of {@code dir/generation_config.json}: only the keys vLLM takes from it
   * for requests that leave them out ({@code temperature}, {@code top_p}, {@code top_k}, {@code
   * min_p}, {@code repetition_penalty}, {@code presence_penalty}, {@code frequency_penalty}); a
   * missing or null key is no default. No file: {@link SamplingDefaults#NONE}. {@code do_sample} is
   * ignored, as vLLM ignores it.
   *
   * @throws ModelLoadException when the file is not a JSON object, or a key holds a non-number
   */
  public static SamplingDefaults samplingDefaults(Path dir) {
    Path file = dir.resolve("generation_config.json");
    if (!Files.isRegularFile(file)) return SamplingDefaults.NONE;
    JsonNode g = readJson(file);
    try {
      JsonNode topK = g.get("top_k");
      Integer k = null;
      if (topK != null && !topK.isNull()) {
        if (!topK.canConvertToInt()
            || topK.isFloatingPointNumber() && topK.asDouble() != topK.asInt())
          throw new IllegalArgumentException("top_k must be an integer, got " + topK);
        k = topK.asInt();
      }
      return new SamplingDefaults(
          number(g, "temperature"),
          number(g, "top_p"),
          k,
          number(g, "min_p"),
          number(g, "repetition_penalty"),
          number(g, "presence_penalty"),
          number(g, "frequency_penalty"));
    } catch (IllegalArgumentException e) {
      throw new ModelLoadException(file + ": " + e.getMessage(), e);
    }
  }

  private static Double number(JsonNode g, String field) {
    JsonNode n = g.get(field);
    if (n == null || n.isNull()) return null;
    if (!n.isNumber()) throw new IllegalArgumentException(field + " must be a number, got " + n);
    return n.asDouble();
  }

  private static JsonNode readJson(Path file) {
    try {
      JsonNode n = JSON.readTree(file.toFile());
      if (n == null || !n.isObject()) throw new ModelLoadException(file + ": not a JSON object");
      return n;
    } catch (IOException e) {
      throw new ModelLoadException(file + ": unreadable JSON: " + e.getMessage(), e);
    }
  }

  private static ModelConfig parse(JsonNode c, List<Integer> eos) {
    JsonNode archs = c.get("architectures");
    String arch =
        archs != null && archs.isArray() && archs.size() > 0 ? archs.get(0).asText() : null;
    if (arch == null || !SUPPORTED.contains(arch))
      throw new IllegalArgumentException(
          "unsupported architecture "
              + arch
              + " (supported: "
              + String.join(", ", SUPPORTED.stream().sorted().toList())
              + ")");
    String act = text(c, "hidden_act", "silu");
    if (!act.equals("silu")) throw new IllegalArgumentException("unsupported hidden_act " + act);
    int hidden = req(c, "hidden_size");
    int heads = req(c, "num_attention_heads");
    int kvHeads =
        c.hasNonNull("num_key_value_heads") ? c.get("num_key_value_heads").asInt() : heads;
    int headDim = c.hasNonNull("head_dim") ? c.get("head_dim").asInt() : hidden / heads;
    if (headDim % 2 != 0) throw new IllegalArgumentException("head_dim " + headDim + " is odd");
    boolean qwen2 = arch.equals("Qwen2ForCausalLM");
    boolean attentionBias = c.path("attention_bias").asBoolean(false);
    if (attentionBias && !qwen2)
      // Llama/Qwen3 attention_bias also adds an o_proj bias, which no released checkpoint of these
      // families uses; refuse rather than silently drop it.
      throw new IllegalArgumentException("attention_bias=true is not supported for " + arch);
    if (c.path("use_sliding_window").asBoolean(false))
      // Qwen2/Qwen3 apply it only to some layers (max_window_layers); no released checkpoint uses
      // it
      throw new IllegalArgumentException("use_sliding_window=true is not supported for " + arch);
    int window =
        arch.equals("MistralForCausalLM") && c.hasNonNull("sliding_window")
            ? c.get("sliding_window").asInt()
            : 0;
    Rope rope = rope(c);
    return new ModelConfig(
        arch,
        req(c, "vocab_size"),
        hidden,
        req(c, "intermediate_size"),
        req(c, "num_hidden_layers"),
        heads,
        kvHeads,
        headDim,
        c.path("max_position_embeddings").asInt(2048),
        c.path("rms_norm_eps").asDouble(1e-6),
        rope.theta(),
        rope.scaling(),
        c.path("tie_word_embeddings").asBoolean(false),
        qwen2,
        arch.equals("Qwen3ForCausalLM"),
        c.hasNonNull("bos_token_id") && c.get("bos_token_id").isInt()
            ? c.get("bos_token_id").asInt()
            : null,
        eos,
        window);
  }

  /** RoPE's base θ and its scaling (null: none). */
  private record Rope(double theta, ModelConfig.RopeScaling scaling) {}

  /**
   * transformers 5 writes {@code rope_parameters} ({@code rope_theta}, {@code rope_type} and the
   * scaling keys in one object) and no top-level {@code rope_theta}/{@code rope_scaling}; older
   * checkpoints have only those. Either form must give the same model: θ silently falling back to
   * 10000 would serve a different one.
   */
  private static Rope rope(JsonNode c) {
    JsonNode p = c.get("rope_parameters");
    if (p == null || p.isNull())
      return new Rope(
          c.path("rope_theta").asDouble(10000.0),
          ropeScaling(c.get("rope_scaling"), "rope_scaling"));
    if (!p.isObject())
      throw new IllegalArgumentException("rope_parameters must be an object, got " + p);
    for (var e : p.properties())
      // Gemma-style per-layer-type parameters ({"full_attention": {...}, ...})
      if (e.getValue().isObject())
        throw new IllegalArgumentException(
            "per-layer-type rope_parameters (" + e.getKey() + ") are not supported");
    double partial = p.path("partial_rotary_factor").asDouble(1.0);
    if (partial != 1.0)
      throw new IllegalArgumentException(
          "rope_parameters.partial_rotary_factor " + partial + " is not supported (1.0 is)");
    JsonNode theta = p.hasNonNull("rope_theta") ? p.get("rope_theta") : c.get("rope_theta");
    if (theta != null && !theta.isNull() && !theta.isNumber())
      throw new IllegalArgumentException("rope_theta must be a number, got " + theta);
    return new Rope(
        theta == null || theta.isNull() ? 10000.0 : theta.asDouble(),
        ropeScaling(p, "rope_parameters"));
  }

  private static ModelConfig.RopeScaling ropeScaling(JsonNode r, String field) {
    if (r == null || r.isNull()) return null;
    String type =
        r.hasNonNull("rope_type") ? r.get("rope_type").asText() : text(r, "type", "default");
    if (type.equals("default")) return null;
    if (!type.equals("llama3"))
      throw new IllegalArgumentException(
          "unsupported " + field + " type " + type + " (llama3 is supported)");
    return new ModelConfig.RopeScaling(
        type,
        reqD(r, field, "factor"),
        reqD(r, field, "low_freq_factor"),
        reqD(r, field, "high_freq_factor"),
        req(r, "original_max_position_embeddings"));
  }

  private static List<Integer> ids(JsonNode n) {
    List<Integer> out = new ArrayList<>();
    if (n == null || n.isNull()) return out;
    if (n.isArray()) n.forEach(x -> out.add(x.asInt()));
    else out.add(n.asInt());
    return out;
  }

  private static String text(JsonNode c, String field, String dflt) {
    return c.hasNonNull(field) ? c.get(field).asText() : dflt;
  }

  private static int req(JsonNode c, String field) {
    JsonNode n = c.get(field);
    if (n == null || !n.canConvertToInt() || n.asInt() <= 0)
      throw new IllegalArgumentException("missing or invalid " + field);
    return n.asInt();
  }

  private static double reqD(JsonNode c, String object, String field) {
    JsonNode n = c.get(field);
    if (n == null || !n.isNumber()) throw new IllegalArgumentException(object + " lacks " + field);
    return n.asDouble();
  }
}
