package dev.troupe.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.typesafe.config.ConfigFactory;
import dev.troupe.protocol.Json;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.logging.LogEntry;
import org.openqa.selenium.logging.LogType;

/**
 * Issue 26 on one real node ({@code troupe serve} with the demo model) that has served a chat and
 * run a training job: {@code GET /v1/cluster} shows the member, the sharding and the replica with
 * its node, device and load; {@code GET /v1/preview/training-jobs} lists the job (status filter,
 * cursor); {@code troupe status} prints them; every metric {@code deploy/grafana/troupe.json}
 * queries has samples in {@code /metrics}, and Debian's prometheus scrapes it and answers a PromQL
 * query (skipped where it is absent); the dashboard, in Debian's headless chromium (skipped only
 * where chromium or its chromedriver is absent), shows the replica, the job and its curve.
 */
class ClusterMonitoringTest {
  static final String KEY = "sk-monitoring";
  @TempDir static Path dir;
  static TroupeNode node;
  static String job;
  static final HttpClient http = HttpClient.newHttpClient();

  @BeforeAll
  static void startNodeChatAndTrain() throws Exception {
    node = startNode(dir);
    job = chatAndTrain(node.httpPort());
  }

  @AfterAll
  static void stop() {
    if (node != null) node.close();
  }

  static TroupeNode startNode(Path dir) throws Exception {
    LaunchOptions o =
        LaunchOptions.parse(
            List.of(
                "--port",
                "0",
                "--cluster-port",
                "0",
                "--management-port",
                "-1",
                "--api-key",
                KEY,
                "--data-dir",
                dir.toString()),
            null);
    TroupeNode n =
        TroupeNode.start(
            o,
            ConfigFactory.parseString(
                "pekko.coordinated-shutdown.exit-jvm = off\n"
                    + "pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off\n"
                    + "pekko.loglevel = WARNING"),
            k -> {});
    n.serving().toCompletableFuture().get(3, TimeUnit.MINUTES);
    return n;
  }

  /** A chat with logprobs, then a training job on its choices, run to its end; the job's id. */
  static String chatAndTrain(int port) throws Exception {
    String model =
        call(
                port,
                "POST",
                "/v1/preview/models",
                "{\"project\":\"p\",\"name\":\"mon\",\"base_model\":\"demo\"}",
                200)
            .get("id")
            .asText();
    ObjectNode chat =
        Json.mapper()
            .createObjectNode()
            .put("model", "demo")
            .put("n", 2)
            .put("max_tokens", 4)
            .put("logprobs", true)
            .put("seed", 1);
    chat.putArray("messages").addObject().put("role", "user").put("content", "Say a number.");
    JsonNode completion = call(port, "POST", "/v1/chat/completions", chat.toString(), 200);
    ObjectNode body = Json.mapper().createObjectNode().put("model_id", model);
    ArrayNode trajectories =
        body.putArray("trajectory_groups").addObject().putArray("trajectories");
    int i = 0;
    for (JsonNode choice : completion.get("choices")) {
      ObjectNode t = trajectories.addObject().put("reward", i++ % 2);
      ArrayNode mc = t.putArray("messages_and_choices");
      mc.addObject().put("role", "user").put("content", "Say a number.");
      mc.add(choice);
    }
    ObjectNode log = Json.mapper().createObjectNode().put("split", "train");
    log.set("trajectory_groups", body.get("trajectory_groups").deepCopy());
    call(port, "POST", "/v1/preview/models/" + model + "/log", log.toString(), 200);
    String id =
        call(port, "POST", "/v1/preview/training-jobs", body.toString(), 200).get("id").asText();
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
    while (System.nanoTime() < deadline) {
      String status =
          call(port, "GET", "/v1/preview/training-jobs/" + id, null, 200).get("status").asText();
      if (status.equals("succeeded")) return id;
      assertFalse(status.equals("failed"), "the training job failed");
      Thread.sleep(200);
    }
    throw new AssertionError("the training job did not finish in 3 minutes");
  }

  static HttpResponse<String> get(int port, String path, String key) throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofMinutes(1));
    if (key != null) b.header("Authorization", "Bearer " + key);
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  static JsonNode call(int port, String method, String path, String body, int expect)
      throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofMinutes(3))
            .header("Authorization", "Bearer " + KEY);
    if (body != null)
      b.header("Content-Type", "application/json")
          .method(method, HttpRequest.BodyPublishers.ofString(body));
    else b.method(method, HttpRequest.BodyPublishers.noBody());
    HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(expect, r.statusCode(), method + " " + path + ": " + r.body());
    return Json.mapper().readTree(r.body());
  }

  @Test
  void clusterViewNamesTheNodeItsReplicaAndTheJob() throws Exception {
    assertEquals(401, get(node.httpPort(), "/v1/cluster", null).statusCode());
    JsonNode c = call(node.httpPort(), "GET", "/v1/cluster", null, 200);
    assertEquals("cluster", c.get("object").asText(), c.toString());
    JsonNode member = c.get("members").get(0);
    assertEquals(1, c.get("members").size(), c.toString());
    assertEquals("up", member.get("status").asText());
    assertTrue(member.get("reachable").asBoolean());
    String address = member.get("node").asText();
    assertTrue(address.matches(".+:\\d+"), address);
    assertTrue(member.get("up_since").asLong() > 0, member.toString());
    assertEquals(List.of("demo#0"), Json.mapper().convertValue(member.get("replicas"), List.class));

    JsonNode replica = c.get("replicas").get(0);
    assertEquals("demo#0", replica.get("id").asText(), c.toString());
    assertEquals("ready", replica.get("state").asText(), replica.toString());
    assertEquals(address, replica.get("node").asText());
    assertEquals("cpu", replica.get("device").get("kind").asText());
    assertTrue(replica.get("kv_cache").get("blocks_total").asInt() > 0, replica.toString());
    // the chat's prompt and generated tokens, counted by the replica that served it
    assertTrue(replica.get("tokens").get("prompt").asLong() > 0, replica.toString());
    assertTrue(replica.get("tokens").get("generation").asLong() > 0, replica.toString());
    assertTrue(
        replica.get("throughput").get("decode_tokens_per_second").asDouble() > 0,
        replica.toString());

    boolean workers = false;
    for (JsonNode t : c.get("sharding")) {
      if (!t.get("type").asText().equals("ModelWorker")) continue;
      workers = true;
      assertEquals(address, t.get("regions").get(0).get("node").asText(), t.toString());
      assertTrue(t.get("regions").get(0).get("entities").asInt() >= 1, t.toString());
    }
    assertTrue(workers, c.get("sharding").toString());
    assertEquals(1, c.get("training_jobs").get("counts").get("succeeded").asInt(), c.toString());
    assertEquals(job, c.get("training_jobs").get("recent").get(0).get("id").asText());
    JsonNode logs = c.get("trajectory_logs").get(0);
    assertEquals("train", logs.get("split").asText(), c.toString());
    assertEquals(1, logs.get("groups").asLong(), c.toString());
    assertEquals(2, logs.get("trajectories").asLong(), c.toString());
    assertEquals(0, c.get("unanswered").size(), c.toString());
  }

  @Test
  void trainingJobsAreListedWithAStatusFilterAndACursor() throws Exception {
    int port = node.httpPort();
    JsonNode all = call(port, "GET", "/v1/preview/training-jobs", null, 200);
    assertEquals("list", all.get("object").asText(), all.toString());
    assertEquals(job, all.get("data").get(0).get("id").asText());
    JsonNode j = all.get("data").get(0);
    assertEquals("succeeded", j.get("status").asText());
    assertTrue(j.get("gradient_steps").asInt() >= 1, j.toString());
    assertTrue(j.get("latest_metrics").has("loss"), j.toString());
    assertEquals(
        0,
        call(port, "GET", "/v1/preview/training-jobs?status=running", null, 200)
            .get("data")
            .size());
    assertEquals(
        1,
        call(port, "GET", "/v1/preview/training-jobs?status=succeeded", null, 200)
            .get("data")
            .size());
    assertEquals(
        0,
        call(port, "GET", "/v1/preview/training-jobs?after=" + job, null, 200).get("data").size());
    // as the other preview lists: a bad query parameter is a 422 naming it
    JsonNode bad = call(port, "GET", "/v1/preview/training-jobs?status=done", null, 422);
    assertEquals("status", bad.get("detail").get(0).get("loc").get(1).asText(), bad.toString());
  }

  @Test
  void troupeStatusPrintsNodesReplicasAndJobs() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int rc =
        StatusCommand.run(
            List.of("--url", "http://127.0.0.1:" + node.httpPort(), "--api-key", KEY),
            null,
            new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8));
    String text = out.toString(StandardCharsets.UTF_8);
    assertEquals(0, rc, err.toString(StandardCharsets.UTF_8));
    assertTrue(text.lines().anyMatch(l -> l.contains("demo#0") && l.contains("ready")), text);
    assertTrue(text.contains(job), text);
    assertTrue(text.lines().anyMatch(l -> l.contains("up") && l.contains("gateway")), text);

    ByteArrayOutputStream refused = new ByteArrayOutputStream();
    int bad =
        StatusCommand.run(
            List.of("--url", "http://127.0.0.1:" + node.httpPort(), "--api-key", "sk-wrong"),
            null,
            new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
            new PrintStream(refused, true, StandardCharsets.UTF_8));
    assertEquals(1, bad);
    assertTrue(
        refused.toString(StandardCharsets.UTF_8).contains("refused the API key"),
        refused.toString());
  }

  @Test
  void troupeStatusWatchRedrawsUntilInterruptedAndOutlivesAnUnreachableGateway() throws Exception {
    // a live gateway: the screen is cleared and the tables drawn again at each interval
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int[] rc = {-1};
    Thread watch =
        new Thread(
            () ->
                rc[0] =
                    StatusCommand.run(
                        List.of(
                            "--url",
                            "http://127.0.0.1:" + node.httpPort(),
                            "--api-key",
                            KEY,
                            "--watch",
                            "0.2"),
                        null,
                        new PrintStream(out, true, StandardCharsets.UTF_8),
                        new PrintStream(
                            new ByteArrayOutputStream(), true, StandardCharsets.UTF_8)));
    watch.start();
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (draws(out) < 3 && System.nanoTime() < deadline) Thread.sleep(50);
    watch.interrupt();
    watch.join(10_000);
    assertFalse(watch.isAlive(), "--watch did not stop when interrupted");
    assertEquals(0, rc[0]);
    assertTrue(draws(out) >= 3, out.toString(StandardCharsets.UTF_8));
    assertTrue(out.toString(StandardCharsets.UTF_8).contains("demo#0"));

    // no gateway there: --watch reports each failure and keeps trying (without it: exit 1)
    int closedPort;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      closedPort = s.getLocalPort();
    }
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    Thread down =
        new Thread(
            () ->
                rc[0] =
                    StatusCommand.run(
                        List.of("--url", "http://127.0.0.1:" + closedPort, "--watch", "0.1"),
                        null,
                        new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                        new PrintStream(err, true, StandardCharsets.UTF_8)));
    down.start();
    deadline = System.nanoTime() + 30_000_000_000L;
    while (err.toString(StandardCharsets.UTF_8).split("cannot reach", -1).length < 3
        && System.nanoTime() < deadline) Thread.sleep(50);
    assertTrue(down.isAlive(), "--watch gave up on an unreachable gateway");
    down.interrupt();
    down.join(10_000);
    assertFalse(down.isAlive());
    assertTrue(
        err.toString(StandardCharsets.UTF_8).split("cannot reach", -1).length >= 3, err.toString());
  }

  /** How many times --watch cleared the screen and drew the tables. */
  private static int draws(ByteArrayOutputStream out) {
    return out.toString(StandardCharsets.UTF_8).split("\033\\[H\033\\[2J", -1).length - 1;
  }

  @Test
  void theRouteHeaderNamesTheReplicaThatServed() throws Exception {
    for (String[] call :
        List.of(
            new String[] {
              "/v1/chat/completions",
              "{\"model\":\"demo\",\"max_tokens\":2,"
                  + "\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}"
            },
            new String[] {
              "/v1/completions", "{\"model\":\"demo\",\"max_tokens\":2,\"prompt\":[\"a\",\"b\"]}"
            })) {
      HttpResponse<String> r =
          http.send(
              HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort() + call[0]))
                  .header("Authorization", "Bearer " + KEY)
                  .header("Content-Type", "application/json")
                  .POST(HttpRequest.BodyPublishers.ofString(call[1]))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertEquals(200, r.statusCode(), r.body());
      String route = r.headers().firstValue("X-Troupe-Route").orElseThrow();
      // one generation per prompt, each naming the replica that served it
      int generations = call[0].equals("/v1/completions") ? 2 : 1;
      assertEquals(generations, route.split("served_by=demo#0", -1).length - 1, route);
    }
  }

  /** A metric name in a PromQL expression of the dashboard. */
  static final Pattern METRIC = Pattern.compile("\\b((?:vllm|troupe):[a-z0-9_:]+)");

  /**
   * The gateway's prefill/decode families the dashboard queries: they have samples only once a
   * model has replicas with roles, so DisaggregationMultiNodeTest checks them, not this test.
   */
  static final Set<String> ONLY_WITH_KV_ROLES =
      Set.of(
          "troupe:disaggregation_decisions_total",
          "troupe:prefill_leg_seconds_bucket",
          "troupe:disaggregation_fallbacks_total");

  /** Every metric name the dashboard's queries use. */
  static Set<String> dashboardMetrics() throws java.io.IOException {
    JsonNode dashboard = Json.mapper().readTree(Files.readString(Path.of("grafana/troupe.json")));
    Set<String> names = new TreeSet<>();
    for (JsonNode panel : dashboard.get("panels"))
      for (JsonNode target : panel.get("targets")) {
        Matcher m = METRIC.matcher(target.get("expr").asText());
        while (m.find()) names.add(m.group(1));
      }
    return names;
  }

  /** The metric names with at least one sample in a /metrics exposition. */
  static Set<String> sampled(String exposition) {
    Set<String> sampled = new TreeSet<>();
    for (String line : exposition.split("\n"))
      if (!line.startsWith("#") && !line.isBlank()) sampled.add(line.split("[{ ]", 2)[0]);
    return sampled;
  }

  @Test
  void everyMetricTheGrafanaDashboardQueriesHasSamples() throws Exception {
    Set<String> names = dashboardMetrics();
    assertTrue(names.size() > 30, names.toString());
    assertTrue(names.containsAll(ONLY_WITH_KV_ROLES), names.toString());
    HttpResponse<String> r = get(node.httpPort(), "/metrics", KEY);
    assertEquals(200, r.statusCode());
    Set<String> missing = new TreeSet<>(names);
    missing.removeAll(sampled(r.body()));
    missing.removeAll(ONLY_WITH_KV_ROLES);
    assertTrue(missing.isEmpty(), "queried but without samples in /metrics: " + missing);
    // the gateway's own families name the replica and node that served
    assertTrue(
        r.body()
            .lines()
            .anyMatch(
                l ->
                    l.startsWith("vllm:request_success_total{")
                        && l.contains("replica=\"demo#0\"")
                        && l.contains("node=\"")),
        r.body());
  }

  static final Path PROMETHEUS = Path.of("/usr/bin/prometheus");

  @Test
  void debiansPrometheusScrapesTheNodeAndAnswersAQuery() throws Exception {
    assumeTrue(Files.isExecutable(PROMETHEUS), "Debian's prometheus is not installed");
    Path work = Files.createTempDirectory(dir, "prometheus");
    Path config = work.resolve("prometheus.yml");
    Files.writeString(
        config,
        """
        global: {scrape_interval: 1s, evaluation_interval: 1s}
        scrape_configs:
          - job_name: troupe
            authorization: {credentials: %s}
            static_configs: [{targets: ["127.0.0.1:%d"]}]
        """
            .formatted(KEY, node.httpPort()));
    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      port = s.getLocalPort();
    }
    Process prometheus =
        new ProcessBuilder(
                PROMETHEUS.toString(),
                "--config.file=" + config,
                "--storage.tsdb.path=" + work.resolve("data"),
                "--web.listen-address=127.0.0.1:" + port)
            .redirectErrorStream(true)
            .redirectOutput(work.resolve("prometheus.log").toFile())
            .start();
    try {
      String query =
          java.net.URLEncoder.encode(
              "sum by (replica, node) (vllm:generation_tokens_total{model_name=\"demo\"})",
              StandardCharsets.UTF_8);
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
      JsonNode result = null;
      while (System.nanoTime() < deadline) {
        try {
          HttpResponse<String> r =
              http.send(
                  HttpRequest.newBuilder(
                          URI.create("http://127.0.0.1:" + port + "/api/v1/query?query=" + query))
                      .build(),
                  HttpResponse.BodyHandlers.ofString());
          if (r.statusCode() == 200) {
            result = Json.mapper().readTree(r.body()).path("data").path("result");
            if (result.size() > 0) break;
          }
        } catch (java.io.IOException notYetUp) {
          // prometheus is still starting
        }
        Thread.sleep(500);
      }
      assertNotNull(
          result, "prometheus never answered: " + Files.readString(work.resolve("prometheus.log")));
      assertEquals(1, result.size(), result.toString());
      assertEquals("demo#0", result.get(0).get("metric").get("replica").asText());
      assertTrue(result.get(0).get("value").get(1).asDouble() > 0, result.toString());
    } finally {
      prometheus.destroy();
      if (!prometheus.waitFor(10, TimeUnit.SECONDS)) prometheus.destroyForcibly();
    }
  }

  static final Path CHROMIUM = Path.of("/usr/bin/chromium");
  static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");

  @Test
  void dashboardInHeadlessChromiumShowsTheReplicaTheJobAndItsCurve() throws Exception {
    assumeTrue(
        Files.isExecutable(CHROMIUM) && Files.isExecutable(CHROMEDRIVER),
        "Debian's chromium and chromium-driver are not installed");
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM.toFile());
    options.addArguments(
        "--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,2000");
    options.setCapability("goog:loggingPrefs", Map.of(LogType.BROWSER, "ALL"));
    ChromeDriverService service =
        new ChromeDriverService.Builder()
            .usingDriverExecutable(CHROMEDRIVER.toFile())
            .usingAnyFreePort()
            .build();
    String base = "http://127.0.0.1:" + node.httpPort();
    Path artifacts = Files.createDirectories(Path.of("target", "dashboard"));
    WebDriver browser = new ChromeDriver(service, options);
    try {
      browser.get(base + "/dashboard#key=" + KEY);
      // two polls give the time charts two points; the curve has the job's gradient steps
      waitFor(
          browser,
          b ->
              rows(b, "replicas").stream()
                      .anyMatch(r -> r.contains("demo#0") && r.contains("ready"))
                  && rows(b, "jobs").stream().anyMatch(r -> r.contains(job.substring(0, 8)))
                  && points(b, "chart-throughput") >= 2
                  && points(b, "chart-kv") >= 2
                  && points(b, "chart-training") >= 1);
      Files.write(
          artifacts.resolve("dashboard.png"),
          ((ChromeDriver) browser).getScreenshotAs(OutputType.BYTES));
      String map =
          (String)
              ((JavascriptExecutor) browser)
                  .executeScript("return document.getElementById('map').innerText");
      assertTrue(map.contains("demo#0"), map);
      List<String> errors = new ArrayList<>();
      for (LogEntry e : browser.manage().logs().get(LogType.BROWSER))
        if (e.getLevel().intValue() >= java.util.logging.Level.WARNING.intValue())
          errors.add(e.getMessage());
      assertEquals(List.of(), errors, "the browser console");

      // Without a key the page asks for one, and says when it is refused.
      browser.get("about:blank");
      browser.get(base + "/dashboard");
      waitFor(browser, b -> b.findElement(By.id("login")).isDisplayed());
      browser.findElement(By.id("key")).sendKeys("sk-wrong");
      browser.findElement(By.cssSelector("#login button")).click();
      waitFor(browser, b -> !b.findElement(By.id("login-error")).getText().isEmpty());
      Files.write(
          artifacts.resolve("dashboard-login.png"),
          ((ChromeDriver) browser).getScreenshotAs(OutputType.BYTES));
      assertFalse(browser.findElement(By.id("main")).isDisplayed());
    } finally {
      browser.quit();
    }
  }

  /** The rows' text, read in one script: the page re-renders its tables at every poll. */
  @SuppressWarnings("unchecked")
  static List<String> rows(WebDriver b, String table) {
    return (List<String>)
        ((JavascriptExecutor) b)
            .executeScript(
                "return [...document.querySelectorAll('#"
                    + table
                    + " tbody tr')].map(r => r.innerText)");
  }

  static int points(WebDriver b, String chart) {
    String p = b.findElement(By.id(chart)).getAttribute("data-points");
    return p == null ? 0 : Integer.parseInt(p);
  }

  /** Polls the page until {@code ready} holds (a minute at most: the page polls every 2 s). */
  static void waitFor(WebDriver b, Predicate<WebDriver> ready) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
    while (!ready.test(b)) {
      if (System.nanoTime() > deadline)
        throw new AssertionError("the page did not get there in a minute:\n" + b.getPageSource());
      Thread.sleep(250);
    }
  }
}
