package dev.troupe.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.adapters.CheckpointStore;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.cuda.TrainingDevices;
import dev.troupe.engine.model.SafetensorsWeights;
import dev.troupe.engine.testing.MapWeights;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.protocol.Json;
import dev.troupe.protocol.cluster.TrainingConfig;
import dev.troupe.training.nd4j.LoraSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The training loop on a tiny model: rewarded answers become likelier; checkpoints resume exactly.
 */
class TrainerTest {
  @TempDir Path dir;

  static final ModelConfig CONFIG = TinyModels.config(TinyModels.Arch.QWEN3);
  static final CharTokenizer TOK = new CharTokenizer(CONFIG.vocabSize());

  static Trainer trainer(Path root) {
    return trainer(root, TrainingBackends.cpu());
  }

  static Trainer trainer(Path root, TrainingBackend.Factory backend) {
    MapWeights w = new MapWeights(CONFIG, TinyModels.randomWeights(CONFIG, 3));
    return new Trainer(
        "m1",
        "tiny",
        CONFIG,
        w,
        new TrajectoryTokenizer(TOK, new ChatMlTemplate()),
        new Trainer.Settings(
            64, new LoraSpec(4, 8, LoraSpec.ALL_TARGETS, false, 1), AdamW.Hyper.ART),
        new CheckpointStore(root),
        backend);
  }

  /** A group of two answers to "Q": "a" (reward 1) and "b" (reward 0), sampler logprob -4.5. */
  static JsonNode group() throws Exception {
    return group(new double[] {-4.5, -4.5}, new double[] {-4.5, -4.5});
  }

  /** As {@link #group()}, with the sampler's logprobs of "a" + end and of "b" + end given. */
  static JsonNode group(double[] a, double[] b) throws Exception {
    List<String> ts = new ArrayList<>();
    for (Object[] ans : new Object[][] {{"a", "1", a}, {"b", "0", b}}) {
      double[] lp = (double[]) ans[2];
      ts.add(
          ("{'reward':%s,'messages_and_choices':[{'role':'user','content':'Q'},"
                  + "{'finish_reason':'stop','message':{'role':'assistant','content':'%s'},"
                  + "'logprobs':{'content':[{'token':'c:%s','logprob':%s},{'token':'<|im_end|>','logprob':%s}]}}]}")
              .formatted(ans[1], ans[0], ans[0], lp[0], lp[1]));
    }
    return Json.mapper()
        .readTree(("{'trajectories':[" + String.join(",", ts) + "]}").replace('\'', '"'));
  }

  static Trainer.Listener quiet() {
    return new Trainer.Listener() {
      @Override
      public void started(int n) {}

      @Override
      public void gradientStep(int i, Map<String, Double> m) {}
    };
  }

  static int[] prompt(char answer) {
    return TOK.encode("<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n" + answer, false);
  }

  static double answerLogprob(Trainer t, char answer) {
    int[] ids = prompt(answer);
    return t.score(ids)[ids.length - 2];
  }

  @ParameterizedTest
  @MethodSource("dev.troupe.engine.cuda.TrainingDevices#names")
  void rewardedAnswerBecomesLikelierAndCheckpointsAreStored(String device) throws Exception {
    TrainingBackend.Factory backend = TrainingDevices.factory(device);
    Trainer t = trainer(dir, backend);
    double a0 = answerLogprob(t, 'a');
    double b0 = answerLogprob(t, 'b');
    TrainingConfig cfg =
        TrainingConfig.resolve(null, null, null, null, null, 2e-2, null, null, null, null, null);
    List<Map<String, Double>> steps = new ArrayList<>();
    int[] started = new int[1];
    Trainer.Result r = null;
    for (int job = 1; job <= 4; job++)
      r =
          t.train(
              job,
              List.of(group()),
              cfg,
              new Trainer.Listener() {
                @Override
                public void started(int n) {
                  started[0] = n;
                }

                @Override
                public void gradientStep(int i, Map<String, Double> m) {
                  steps.add(m);
                }
              });
    assertEquals(1, started[0]); // both histories fit one 64-token row
    assertEquals(4, steps.size());
    assertEquals(0.5, steps.get(0).get("reward"));
    assertTrue(steps.get(0).get("grad_norm") > 0);
    double a1 = answerLogprob(t, 'a');
    double b1 = answerLogprob(t, 'b');
    assertTrue(a1 > a0 + 1.0, "log p(a) " + a0 + " -> " + a1);
    assertTrue(b1 < b0 - 1.0, "log p(b) " + b0 + " -> " + b1);

    Path ckpt = r.checkpoint();
    assertEquals(dir.resolve("m1").resolve("0004"), ckpt);
    assertTrue(Files.isRegularFile(ckpt.resolve("adapter_config.json")));
    JsonNode cfgJson = Json.mapper().readTree(ckpt.resolve("adapter_config.json").toFile());
    assertEquals(4, cfgJson.get("r").asInt());
    assertEquals("LORA", cfgJson.get("peft_type").asText());
    try (SafetensorsWeights st =
        SafetensorsWeights.openFile(ckpt.resolve("adapter_model.safetensors"))) {
      assertTrue(
          st.info("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight")
              .hasShape(4, CONFIG.hiddenSize()));
    }
    assertEquals(4, r.adapter().version());
    assertEquals(0.5, r.metrics().get("train/reward"));

    // a fresh trainer restored from the checkpoint scores exactly like the trained one
    try (Trainer restored = trainer(dir, backend)) {
      restored.restore(ckpt);
      assertEquals(a1, answerLogprob(restored, 'a'), 1e-5);
    }
    t.close();
  }

  @Test
  void nothingTrainableStillStoresTheStep() throws Exception {
    Trainer t = trainer(dir);
    JsonNode flat =
        Json.mapper().readTree("{\"trajectories\":[{\"reward\":1,\"messages_and_choices\":[]}]}");
    Trainer.Result r =
        t.train(
            1,
            List.of(flat),
            TrainingConfig.defaults(),
            new Trainer.Listener() {
              @Override
              public void started(int n) {
                assertEquals(0, n);
              }

              @Override
              public void gradientStep(int i, Map<String, Double> m) {
                throw new AssertionError("no step expected");
              }
            });
    assertTrue(Files.isRegularFile(r.checkpoint().resolve("adapter_model.safetensors")));
    assertEquals(0.0, r.metrics().get("train/num_gradient_steps"));
  }
}
