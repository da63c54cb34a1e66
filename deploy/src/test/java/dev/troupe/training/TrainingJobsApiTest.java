package dev.troupe.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.typesafe.config.Config;
import dev.troupe.engine.testing.MapWeights;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.gateway.http.ApiRoutes;
import dev.troupe.gateway.http.GatewayServer;
import dev.troupe.gateway.http.GatewaySettings;
import dev.troupe.gateway.preview.PreviewContext;
import dev.troupe.gateway.preview.PreviewRoutes;
import dev.troupe.gateway.preview.training.TrainingRoutes;
import dev.troupe.node.DataEntities;
import dev.troupe.persistence.PersistenceInit;
import dev.troupe.persistence.PersistenceSettings;
import dev.troupe.protocol.Json;
import dev.troupe.testing.TestNodeConfig;
import dev.troupe.training.nd4j.LoraSpec;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The ART client flow over real HTTP on a one-node cluster with H2: create a model, submit training
 * jobs, poll their events, read the checkpoints. The base model is a tiny Qwen3 with a character
 * tokenizer (the demo model's 152k vocabulary would make this slow).
 */
class TrainingJobsApiTest {
  static final String KEY = "sk-training-test";
  static final String BASE = "tiny-base";
  @TempDir static Path dir;
  static ActorSystem<Void> system;
  static ServerBinding binding;
  static final List<String> published = new CopyOnWriteArrayList<>();
  static final HttpClient http = HttpClient.newHttpClient();

  @BeforeAll
  static void start() throws Exception {
    PersistenceSettings ps = PersistenceSettings.h2(dir.resolve("troupe"));
    PersistenceInit.ensureSchema(ps);
    Config config = TestNodeConfig.gatewayTrainer(ps, BASE);
    system = ActorSystem.create(Behaviors.empty(), "troupe", config);
    Cluster cluster = Cluster.get(system);
    cluster.manager().tell(Join.create(cluster.selfMember().address()));
    DataEntities.init(system, ps);
    var tiny = TinyModels.config(TinyModels.Arch.QWEN3);
    var weights = new MapWeights(tiny, TinyModels.randomWeights(tiny, 3));
    Trainers.BaseModels bases =
        name -> {
          if (!name.equals(BASE)) throw new IllegalArgumentException("unknown base " + name);
          return new Trainers.BaseModels.Loaded(
              tiny, weights, new CharTokenizer(tiny.vocabSize()), new ChatMlTemplate());
        };
    TrainingSettings ts =
        new TrainingSettings(
            dir.resolve("checkpoints"),
            new Trainer.Settings(
                64, new LoraSpec(4, 8, LoraSpec.ALL_TARGETS, false, 1), AdamW.Hyper.ART),
            Duration.ofSeconds(20),
            Duration.ofMinutes(1));
    TrainingEntities.init(
        system,
        ts,
        bases,
        (modelId, base, step, d, adapter) -> published.add(modelId + ":" + step + ":" + d));
    GatewaySettings gs = GatewaySettings.of(0, List.of(KEY));
    PreviewContext ctx = PreviewContext.sharded(system, Duration.ofSeconds(20));
    var route =
        ApiRoutes.builder(gs)
            .addAll(PreviewRoutes.all(ctx))
            .addAll(TrainingRoutes.all(ctx))
            .build();
    binding = GatewayServer.bind(system, gs, route).toCompletableFuture().get(30, TimeUnit.SECONDS);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (cluster.selfMember().status() != MemberStatus.up()) {
      if (System.nanoTime() > deadline) throw new IllegalStateException("node did not come up");
      Thread.sleep(50);
    }
  }

  @AfterAll
  static void stop() throws Exception {
    system.terminate();
    system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  record Reply(int status, JsonNode body) {}

  static Reply call(String method, String path, String body) throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + binding.localAddress().getPort() + path))
            .header("Authorization", "Bearer " + KEY)
            .timeout(Duration.ofSeconds(60));
    if (body != null)
      b.header("Content-Type", "application/json")
          .method(method, HttpRequest.BodyPublishers.ofString(body));
    else b.method(method, HttpRequest.BodyPublishers.noBody());
    HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    return new Reply(r.statusCode(), r.body().isEmpty() ? null : Json.mapper().readTree(r.body()));
  }

  static String group(String a, double ra, String b, double rb) {
    String t =
        "{'reward':%s,'messages_and_choices':[{'role':'user','content':'Q'},"
            + "{'finish_reason':'stop','index':0,'message':{'role':'assistant','content':'%s'},"
            + "'logprobs':{'content':[{'token':'c:%s','logprob':-4.5},{'token':'<|im_end|>','logprob':-4.5}]}}]}";
    return "{'trajectories':[" + t.formatted(ra, a, a) + "," + t.formatted(rb, b, b) + "]}";
  }

  static String createModel(String name) throws Exception {
    Reply m =
        call(
            "POST",
            "/v1/preview/models",
            "{\"project\":\"p\",\"name\":\"%s\",\"base_model\":\"%s\"}".formatted(name, BASE));
    assertEquals(200, m.status(), String.valueOf(m.body()));
    return m.body().get("id").asText();
  }

  /**
   * Polls like ART: every 100 ms (ART: 1 s), with after = the last seen id, until a terminal event.
   */
  static List<JsonNode> poll(String jobId) throws Exception {
    List<JsonNode> all = new ArrayList<>();
    String after = null;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (System.nanoTime() < deadline) {
      Reply page =
          call(
              "GET",
              "/v1/preview/training-jobs/"
                  + jobId
                  + "/events?limit=2"
                  + (after == null ? "" : "&after=" + after),
              null);
      assertEquals(200, page.status(), String.valueOf(page.body()));
      for (JsonNode e : page.body().get("data")) {
        all.add(e);
        after = e.get("id").asText();
        String type = e.get("type").asText();
        if (type.equals("training_ended") || type.equals("training_failed")) return all;
      }
      if (!page.body().get("has_more").asBoolean()) Thread.sleep(100);
    }
    throw new AssertionError("job did not finish: " + all);
  }

  @Test
  void trainsAndListsTheCheckpointBeforeTrainingEnded() throws Exception {
    String model = createModel("flow");
    String body =
        ("{'model_id':'"
                + model
                + "','trajectory_groups':["
                + group("a", 1, "b", 0)
                + "],'experimental_config':{'learning_rate':0.01,'ppo':true}}")
            .replace('\'', '"');
    Reply job = call("POST", "/v1/preview/training-jobs", body);
    assertEquals(200, job.status(), String.valueOf(job.body()));
    String jobId = job.body().get("id").asText();

    List<JsonNode> events = poll(jobId);
    assertEquals(
        List.of("training_started", "gradient_step", "training_ended"),
        events.stream().map(e -> e.get("type").asText()).toList());
    assertEquals(1, events.get(0).get("data").get("num_sequences").asInt());
    JsonNode metrics = events.get(1).get("data");
    for (String k :
        List.of(
            "loss",
            "policy_loss",
            "entropy",
            "grad_norm",
            "learning_rate",
            "reward",
            "reward_std_dev",
            "num_trajectories",
            "num_trainable_tokens",
            "tokens_per_second"))
      assertTrue(metrics.has(k), "gradient_step lacks " + k + ": " + metrics);
    assertEquals(0.5, metrics.get("reward").asDouble());
    assertEquals(0.01, metrics.get("learning_rate").asDouble());

    Reply cps =
        call("GET", "/v1/preview/models/" + model + "/checkpoints?limit=1&order=desc", null);
    JsonNode latest = cps.body().get("data").get(0);
    assertEquals(1, latest.get("step").asInt());
    assertEquals(0.5, latest.get("metrics").get("train/reward").asDouble());

    Reply status = call("GET", "/v1/preview/training-jobs/" + jobId, null);
    assertEquals("succeeded", status.body().get("status").asText());
    assertEquals(1, status.body().get("step").asInt());
    assertTrue(published.stream().anyMatch(p -> p.startsWith(model + ":1:")));
    Path ckpt =
        Path.of(
            published.stream()
                .filter(p -> p.startsWith(model + ":1:"))
                .findFirst()
                .orElseThrow()
                .split(":", 3)[2]);
    assertTrue(Files.isRegularFile(ckpt.resolve("adapter_model.safetensors")));

    // nothing trainable (equal rewards): the step still advances
    String flat =
        ("{'model_id':'"
                + model
                + "','trajectory_groups':["
                + group("a", 1, "b", 1)
                + "],'experimental_config':null}")
            .replace('\'', '"');
    String second = call("POST", "/v1/preview/training-jobs", flat).body().get("id").asText();
    List<JsonNode> ev2 = poll(second);
    assertEquals(
        List.of("training_started", "training_ended"),
        ev2.stream().map(e -> e.get("type").asText()).toList());
    assertEquals(0, ev2.get(0).get("data").get("num_sequences").asInt());
    assertEquals(
        2,
        call("GET", "/v1/preview/models/" + model + "/checkpoints?limit=1&order=desc", null)
            .body()
            .get("data")
            .get(0)
            .get("step")
            .asInt());
  }

  @Test
  void rejectsInvalidBodiesAndUnknownModels() throws Exception {
    Reply bad =
        call(
            "POST",
            "/v1/preview/training-jobs",
            "{\"trajectory_groups\":[{\"trajectories\":[{\"messages_and_choices\":[]}]}],\"experimental_config\":{\"importance_sampling_level\":\"tokens\",\"ppo\":1}}");
    assertEquals(422, bad.status());
    List<String> locs = new ArrayList<>();
    for (JsonNode d : bad.body().get("detail")) locs.add(d.get("loc").toString());
    assertTrue(locs.contains("[\"body\",\"model_id\"]"), locs.toString());
    assertTrue(
        locs.contains("[\"body\",\"trajectory_groups\",0,\"trajectories\",0,\"reward\"]"),
        locs.toString());
    assertTrue(
        locs.contains("[\"body\",\"experimental_config\",\"importance_sampling_level\"]"),
        locs.toString());
    assertTrue(locs.contains("[\"body\",\"experimental_config\",\"ppo\"]"), locs.toString());

    Reply unknown =
        call(
            "POST",
            "/v1/preview/training-jobs",
            "{\"model_id\":\"6f1c1a8e-1111-4222-8333-444455556666\",\"trajectory_groups\":[]}");
    assertEquals(404, unknown.status());
    assertEquals(
        404,
        call("GET", "/v1/preview/training-jobs/6f1c1a8e-1111-4222-8333-444455556666", null)
            .status());
    assertEquals(404, call("GET", "/v1/preview/training-jobs/nope/events", null).status());
  }

  @Test
  void aJobOnAModelWithoutItsBaseFailsVisibly() throws Exception {
    // the base model is resolvable at creation (served) but the trainer cannot load it: a
    // training_failed event with the reason, never a hang
    Reply m =
        call(
            "POST",
            "/v1/preview/models",
            "{\"project\":\"p\",\"name\":\"broken\",\"base_model\":\"%s\"}".formatted(BASE));
    String model = m.body().get("id").asText();
    String body =
        ("{'model_id':'"
                + model
                + "','trajectory_groups':[{'trajectories':[{'reward':1,'messages_and_choices':"
                + "[{'role':'user','content':'Q'},{'finish_reason':'stop','message':{'role':'assistant','content':'x'},"
                + "'logprobs':{'content':[{'token':'token_id:999999','logprob':-1}]}}]},"
                + "{'reward':0,'messages_and_choices':[{'role':'user','content':'Q'},{'finish_reason':'stop',"
                + "'message':{'role':'assistant','content':'y'},'logprobs':{'content':[{'token':'c:y','logprob':-1}]}}]}]}]}")
            .replace('\'', '"');
    String jobId = call("POST", "/v1/preview/training-jobs", body).body().get("id").asText();
    List<JsonNode> events = poll(jobId);
    JsonNode last = events.get(events.size() - 1);
    assertEquals("training_failed", last.get("type").asText());
    assertTrue(last.get("data").get("error_message").asText().length() > 0);
    assertEquals(
        "failed",
        call("GET", "/v1/preview/training-jobs/" + jobId, null).body().get("status").asText());
  }
}
