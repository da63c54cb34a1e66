import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * An ART-style RL loop over Troupe's HTTP API only: create a trainable model on a served base model,
 * roll out {@code n} samples per prompt with logprobs, score them with a verifiable reward, submit a
 * training job, poll its events until it ends, read the new checkpoint, repeat; prints the reward
 * curve. Rollouts name the trainable model by its UUID (its latest step), as ART does with its
 * inference name (the response's {@code system_fingerprint} is the step that answered). Pass the
 * base model's name as the fifth argument to roll out from the base model instead (the reward then
 * cannot rise). {@code RlLoopOverHttpTest} (deploy) is a seeded, learnable version of this loop.
 *
 * <p>Reward (verifiable): 1 when the answer, trimmed, starts with a digit, else 0.
 *
 * <p>Run from the repository's root while {@code ./troupe serve} runs (single-file source launch;
 * Jackson comes from the distribution jar that {@code ./troupe serve} built):
 *
 * <pre>
 * java -cp deploy/target/troupe.jar examples/rl-loop/RlLoop.java \
 *   http://localhost:8000 $(cat data/api-key) demo 30 [rollout-model]
 * </pre>
 *
 * <p>{@code RlLoopExampleTest} (deploy) runs this command for one job.
 */
public final class RlLoop {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String[] PROMPTS = {"Count to three.", "Name a number.", "How many legs has a cat?", "Say a year."};

  final HttpClient http = HttpClient.newHttpClient();
  final String base;
  final String key;

  RlLoop(String base, String key) {
    this.base = base;
    this.key = key;
  }

  public static void main(String[] args) throws Exception {
    String base = args.length > 0 ? args[0] : "http://localhost:8000";
    String key = args.length > 1 ? args[1] : System.getenv("TROUPE_API_KEY");
    String baseModel = args.length > 2 ? args[2] : "demo";
    int jobs = args.length > 3 ? Integer.parseInt(args[3]) : 30;
    String rolloutModel = args.length > 4 ? args[4] : null;
    List<Double> curve =
        new RlLoop(base, key).run(baseModel, rolloutModel, "rl-loop-" + System.currentTimeMillis(), jobs, 8, 8, 0.02);
    System.out.println("reward curve: " + curve);
  }

  /** Runs {@code jobs} iterations; returns the mean rollout reward of each. */
  List<Double> run(String baseModel, String rolloutModel, String name, int jobs, int n, int maxTokens, double learningRate)
      throws Exception {
    ObjectNode create = JSON.createObjectNode().put("project", "examples").put("name", name).put("base_model", baseModel);
    String modelId = call("POST", "/v1/preview/models", create).get("id").asText();
    String sampleFrom = rolloutModel != null ? rolloutModel : modelId;
    List<Double> curve = new ArrayList<>();
    for (int job = 0; job < jobs; job++) {
      ArrayNode groups = JSON.createArrayNode();
      double sum = 0;
      int count = 0;
      for (String prompt : PROMPTS) {
        ObjectNode chat = JSON.createObjectNode().put("model", sampleFrom).put("n", n).put("max_tokens", maxTokens)
            .put("temperature", 1.0).put("logprobs", true);
        chat.putArray("messages").addObject().put("role", "user").put("content", prompt);
        JsonNode completion = call("POST", "/v1/chat/completions", chat);
        ObjectNode group = groups.addObject();
        ArrayNode trajectories = group.putArray("trajectories");
        for (JsonNode choice : completion.get("choices")) {
          String answer = choice.path("message").path("content").asText("").trim();
          double reward = !answer.isEmpty() && Character.isDigit(answer.charAt(0)) ? 1 : 0;
          sum += reward;
          count++;
          ObjectNode t = trajectories.addObject().put("reward", reward);
          ArrayNode mc = t.putArray("messages_and_choices");
          mc.addObject().put("role", "user").put("content", prompt);
          mc.add(choice); // the Choice as returned, logprobs included
        }
      }
      curve.add(sum / count);
      ObjectNode body = JSON.createObjectNode().put("model_id", modelId);
      body.set("trajectory_groups", groups);
      body.putObject("experimental_config").put("learning_rate", learningRate);
      String jobId = call("POST", "/v1/preview/training-jobs", body).get("id").asText();
      String last = waitForJob(jobId);
      JsonNode step = call("GET", "/v1/preview/models/" + modelId + "/checkpoints?limit=1&order=desc", null).get("data").get(0);
      System.out.printf("job %d: reward %.3f, %s, step %d%n", job + 1, sum / count, last, step.get("step").asInt());
    }
    return curve;
  }

  /** Polls the job's events like ART (after = last seen id) until training_ended or training_failed. */
  String waitForJob(String jobId) throws Exception {
    String after = null;
    while (true) {
      JsonNode page = call("GET", "/v1/preview/training-jobs/" + jobId + "/events" + (after == null ? "" : "?after=" + after), null);
      for (JsonNode e : page.get("data")) {
        after = e.get("id").asText();
        String type = e.get("type").asText();
        if (type.equals("training_ended")) return type;
        if (type.equals("training_failed")) throw new IllegalStateException("training failed: " + e.get("data"));
      }
      if (!page.get("has_more").asBoolean()) Thread.sleep(200);
    }
  }

  JsonNode call(String method, String path, JsonNode body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofMinutes(5))
        .header("Authorization", "Bearer " + key);
    if (body != null)
      b.header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)));
    else b.method(method, HttpRequest.BodyPublishers.noBody());
    HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200) throw new IllegalStateException(method + " " + path + " -> " + r.statusCode() + ": " + r.body());
    return JSON.readTree(r.body());
  }
}
