package dev.troupe.engine.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import dev.troupe.engine.runner.ModelRunners;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import dev.troupe.protocol.cluster.SamplingDefaults;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class ModelConfigsTest {
  @TempDir Path tmp;

  @ParameterizedTest
  @EnumSource(Arch.class)
  void roundTripsEveryArchitecture(Arch arch) throws IOException {
    ModelConfig c = TinyModels.config(arch);
    Files.writeString(tmp.resolve("config.json"), TinyModels.configJson(c));
    assertEquals(c, ModelConfigs.read(tmp));
  }

  @Test
  void readsARealLlama32Config() throws IOException {
    // the shape of meta-llama/Llama-3.2-1B-Instruct's config.json
    Files.writeString(
        tmp.resolve("config.json"),
        """
        {"architectures": ["LlamaForCausalLM"], "attention_bias": false, "bos_token_id": 128000,
         "eos_token_id": [128001, 128008, 128009], "head_dim": 64, "hidden_act": "silu",
         "hidden_size": 2048, "intermediate_size": 8192, "max_position_embeddings": 131072,
         "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8,
         "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0,
         "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"},
         "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
         "vocab_size": 128256}""");
    Files.writeString(
        tmp.resolve("generation_config.json"),
        "{\"bos_token_id\": 128000, \"eos_token_id\": [128001, 128008, 128009], \"temperature\": 0.6}");
    ModelConfig c = ModelConfigs.read(tmp);
    assertEquals(64, c.headDim());
    assertEquals(8, c.numKvHeads());
    assertEquals(new ModelConfig.RopeScaling("llama3", 32.0, 1.0, 4.0, 8192), c.ropeScaling());
    assertTrue(c.tieWordEmbeddings());
    assertFalse(c.attentionBias());
    assertEquals(128000, c.bosTokenId());
    assertEquals(List.of(128001, 128008, 128009), c.eosTokenIds());
  }

  /**
   * {@code json} as transformers 5 writes it: rope_theta and rope_scaling inside rope_parameters.
   */
  static String transformers5(String json) throws IOException {
    ObjectMapper m = new ObjectMapper();
    ObjectNode c = (ObjectNode) m.readTree(json);
    ObjectNode p = m.createObjectNode();
    p.put("rope_type", "default");
    if (c.has("rope_scaling")) p.setAll((ObjectNode) c.remove("rope_scaling"));
    p.set("rope_theta", c.remove("rope_theta"));
    c.set("rope_parameters", p);
    return m.writeValueAsString(c);
  }

  @ParameterizedTest
  @EnumSource(Arch.class)
  void readsTransformers5RopeParametersAsTheOlderForm(Arch arch) throws IOException {
    ModelConfig c = TinyModels.config(arch);
    String v5 = transformers5(TinyModels.configJson(c));
    assertFalse(v5.contains("\"rope_scaling\""), v5);
    Files.writeString(tmp.resolve("config.json"), v5);
    assertEquals(c, ModelConfigs.read(tmp), v5);
  }

  @Test
  void readsATransformers5Llama31Config() throws IOException {
    // the shape of Llama-3.1-8B's config.json as transformers 5 saves it (make_random_model.py)
    Files.writeString(
        tmp.resolve("config.json"),
        """
        {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
         "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
         "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "vocab_size": 128256,
         "rope_parameters": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
           "original_max_position_embeddings": 8192, "rope_theta": 500000.0,
           "rope_type": "llama3"},
         "tie_word_embeddings": false, "dtype": "bfloat16", "transformers_version": "5.17.0"}""");
    ModelConfig c = ModelConfigs.read(tmp);
    assertEquals(500000.0, c.ropeTheta());
    assertEquals(new ModelConfig.RopeScaling("llama3", 8.0, 1.0, 4.0, 8192), c.ropeScaling());
    // Qwen3's: default rope, θ only inside rope_parameters
    Files.writeString(
        tmp.resolve("config.json"),
        """
        {"architectures": ["Qwen3ForCausalLM"], "hidden_size": 2048, "intermediate_size": 6144,
         "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
         "head_dim": 128, "vocab_size": 151936,
         "rope_parameters": {"rope_theta": 1000000, "rope_type": "default"}}""");
    c = ModelConfigs.read(tmp);
    assertEquals(1_000_000.0, c.ropeTheta());
    assertNull(c.ropeScaling());
  }

  @Test
  void ropeParametersWeCannotRunAreClearErrors() throws IOException {
    String base =
        "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64, \"intermediate_size\": 128,"
            + " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"vocab_size\": 100, ";
    for (String[] bad :
        new String[][] {
          {"\"rope_parameters\": {\"rope_type\": \"yarn\", \"factor\": 4.0}}", "yarn"},
          {
            "\"rope_parameters\": {\"rope_theta\": 1e4, \"partial_rotary_factor\": 0.5}}",
            "partial_rotary_factor"
          },
          {"\"rope_parameters\": {\"full_attention\": {\"rope_theta\": 1e6}}}", "per-layer-type"},
          {"\"rope_parameters\": {\"rope_type\": \"llama3\", \"factor\": 8.0}}", "low_freq_factor"},
          {"\"rope_parameters\": [1]}", "rope_parameters must be an object"}
        }) {
      Files.writeString(tmp.resolve("config.json"), base + bad[0]);
      ModelLoadException e = assertThrows(ModelLoadException.class, () -> ModelConfigs.read(tmp));
      assertTrue(e.getMessage().contains(bad[1]), bad[0] + " -> " + e.getMessage());
    }
  }

  @Test
  void theCpuRunnerComputesTheSameModelFromEitherRopeForm() throws IOException {
    Path old = TinyModels.write(tmp.resolve("old"), Arch.LLAMA3_SCALED, DType.F32, 7, false);
    Path v5 = TinyModels.write(tmp.resolve("v5"), Arch.LLAMA3_SCALED, DType.F32, 7, false);
    String json = Files.readString(old.resolve("config.json"));
    Files.writeString(v5.resolve("config.json"), transformers5(json));
    Path none = TinyModels.write(tmp.resolve("none"), Arch.LLAMA3_SCALED, DType.F32, 7, false);
    ObjectMapper m = new ObjectMapper();
    ObjectNode c = (ObjectNode) m.readTree(json);
    c.remove(List.of("rope_theta", "rope_scaling"));
    Files.writeString(none.resolve("config.json"), m.writeValueAsString(c));
    int[] tokens = {5, 17, 3, 60, 22, 9, 41, 1, 33, 12};
    float[][] a = lastLogits(old, tokens), b = lastLogits(v5, tokens), d = lastLogits(none, tokens);
    assertTrue(Arrays.deepEquals(a, b), "the same weights and rope, either form");
    assertFalse(Arrays.deepEquals(a, d), "the rope settings change the logits (control)");
  }

  private static float[][] lastLogits(Path dir, int[] tokens) {
    try (ModelRunner r = ModelRunners.open(dir, 4, 4)) {
      return r.forward(List.of(new SequenceChunk(tokens, 0, new int[] {0, 1, 2}, true))).get(0);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void samplingDefaultsComeFromGenerationConfig() throws IOException {
    // the shape of Qwen/Qwen3-0.6B's generation_config.json, plus the penalties vLLM main also
    // reads
    Files.writeString(
        tmp.resolve("generation_config.json"),
        """
        {"bos_token_id": 151643, "do_sample": true, "eos_token_id": [151645, 151643],
         "pad_token_id": 151643, "temperature": 0.6, "top_k": 20, "top_p": 0.95, "min_p": 0,
         "repetition_penalty": 1.05, "presence_penalty": 0.5, "frequency_penalty": -0.25,
         "max_new_tokens": 2048, "transformers_version": "4.51.0"}""");
    assertEquals(
        new SamplingDefaults(0.6, 0.95, 20, 0.0, 1.05, 0.5, -0.25),
        ModelConfigs.samplingDefaults(tmp));
  }

  @Test
  void absentSamplingKeysAreNoDefaults() throws IOException {
    assertEquals(
        SamplingDefaults.NONE, ModelConfigs.samplingDefaults(tmp), "no generation_config.json");
    Files.writeString(
        tmp.resolve("generation_config.json"),
        "{\"eos_token_id\": 2, \"temperature\": 0.7, \"top_p\": null}");
    assertEquals(
        new SamplingDefaults(0.7, null, null, null, null, null, null),
        ModelConfigs.samplingDefaults(tmp));
  }

  @Test
  void malformedSamplingDefaultsRefuseToLoad() throws IOException {
    Files.writeString(tmp.resolve("generation_config.json"), "{\"temperature\": \"hot\"}");
    assertThrows(ModelLoadException.class, () -> ModelConfigs.samplingDefaults(tmp));
    Files.writeString(tmp.resolve("generation_config.json"), "{\"top_k\": 2.5}");
    assertThrows(ModelLoadException.class, () -> ModelConfigs.samplingDefaults(tmp));
  }

  @Test
  void mistralSlidingWindowIsRead() throws IOException {
    Files.writeString(
        tmp.resolve("config.json"),
        """
        {"architectures": ["MistralForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
         "vocab_size": 100, "sliding_window": 4096}""");
    assertEquals(4096, ModelConfigs.read(tmp).slidingWindow());
    Files.writeString(
        tmp.resolve("config.json"),
        """
        {"architectures": ["MistralForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
         "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100, "sliding_window": null}""");
    assertEquals(0, ModelConfigs.read(tmp).slidingWindow());
  }

  @Test
  void generationConfigEosComesFirstAndDefaultsApply() throws IOException {
    Files.writeString(
        tmp.resolve("config.json"),
        """
        {"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
         "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100, "eos_token_id": 7}""");
    Files.writeString(tmp.resolve("generation_config.json"), "{\"eos_token_id\": [9, 7]}");
    ModelConfig c = ModelConfigs.read(tmp);
    assertEquals(List.of(9, 7), c.eosTokenIds());
    assertEquals(4, c.numKvHeads());
    assertEquals(16, c.headDim());
    assertTrue(c.attentionBias());
    assertFalse(c.tieWordEmbeddings());
    assertNull(c.ropeScaling());
  }

  @Test
  void unsupportedArchitectureAndRopeAreClearErrors() throws IOException {
    Files.writeString(
        tmp.resolve("config.json"),
        "{\"architectures\": [\"GPT2LMHeadModel\"], \"hidden_size\": 64, \"vocab_size\": 10}");
    ModelLoadException e = assertThrows(ModelLoadException.class, () -> ModelConfigs.read(tmp));
    assertTrue(e.getMessage().contains("unsupported architecture GPT2LMHeadModel"), e.getMessage());
    assertTrue(e.getMessage().contains("config.json"), e.getMessage());
    assertThrows(ModelLoadException.class, () -> ModelRunners.open(tmp, 4, 4));
    Files.writeString(
        tmp.resolve("config.json"),
        """
        {"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
         "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100,
         "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}""");
    e = assertThrows(ModelLoadException.class, () -> ModelConfigs.read(tmp));
    assertTrue(e.getMessage().contains("yarn"), e.getMessage());
    assertThrows(ModelLoadException.class, () -> ModelConfigs.read(tmp.resolve("absent")));
    Files.writeString(
        tmp.resolve("config.json"),
        """
        {"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
         "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100,
         "use_sliding_window": true, "sliding_window": 4096, "max_window_layers": 1}""");
    e = assertThrows(ModelLoadException.class, () -> ModelConfigs.read(tmp));
    assertTrue(e.getMessage().contains("use_sliding_window"), e.getMessage());
  }
}
