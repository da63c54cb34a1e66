package dev.troupe.deploy;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.equalTo;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.github.tomakehurst.wiremock.WireMockServer;
import dev.troupe.protocol.Json;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The Kubernetes API as Pekko's {@code kubernetes-api} discovery reads it, for the bootstrap test:
 * {@code GET /api/v1/namespaces/<ns>/pods?labelSelector=app=<app>} over HTTPS on 127.0.0.1
 * (WireMock), answered only with the service account's bearer token (else 403, as RBAC would),
 * listing the pods added here as Running with their IPs. The server's certificate (SAN
 * IP:127.0.0.1, made with the JDK's keytool) is the CA file the discovery trusts; token, CA and
 * namespace files lie where a pod's service account mounts them, under {@code dir}.
 */
final class KubernetesApiFake implements AutoCloseable {
  static final String NAMESPACE = "troupe-test";
  static final String APP = "troupe";
  private static final String PASSWORD = "changeit";

  private final WireMockServer server;
  private final String token = "token-" + System.nanoTime();
  private final Path dir;
  private final int managementPort;
  private final Map<String, String> pods = new LinkedHashMap<>(); // name -> IP

  KubernetesApiFake(Path dir, int managementPort) throws Exception {
    this.dir = dir;
    this.managementPort = managementPort;
    Files.createDirectories(dir);
    Path keystore = dir.resolve("api.p12");
    keytool(
        "-genkeypair",
        "-alias",
        "api",
        "-keyalg",
        "RSA",
        "-keysize",
        "2048",
        "-validity",
        "2",
        "-dname",
        "CN=127.0.0.1",
        "-ext",
        "san=ip:127.0.0.1",
        "-keystore",
        keystore.toString(),
        "-storetype",
        "PKCS12",
        "-storepass",
        PASSWORD,
        "-keypass",
        PASSWORD);
    keytool(
        "-exportcert",
        "-rfc",
        "-alias",
        "api",
        "-keystore",
        keystore.toString(),
        "-storepass",
        PASSWORD,
        "-file",
        caFile().toString());
    Files.writeString(tokenFile(), token);
    Files.writeString(namespaceFile(), NAMESPACE);
    server =
        new WireMockServer(
            options()
                .bindAddress("127.0.0.1")
                .httpDisabled(true)
                .dynamicHttpsPort()
                .keystorePath(keystore.toString())
                .keystoreType("PKCS12")
                .keystorePassword(PASSWORD)
                .keyManagerPassword(PASSWORD));
    server.start();
    publish();
  }

  private static void keytool(String... args) throws Exception {
    var cmd = new java.util.ArrayList<String>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
    cmd.addAll(java.util.List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0)
      throw new IllegalStateException("keytool failed: " + out);
  }

  int port() {
    return server.httpsPort();
  }

  Path caFile() {
    return dir.resolve("ca.crt");
  }

  Path tokenFile() {
    return dir.resolve("token");
  }

  Path namespaceFile() {
    return dir.resolve("namespace");
  }

  /** A pod labelled {@code app=troupe}, Running at {@code ip}, appears in the list. */
  synchronized void addPod(String name, String ip) {
    pods.put(name, ip);
    publish();
  }

  /** The pod is gone from the list (deleted). */
  synchronized void deletePod(String name) {
    pods.remove(name);
    publish();
  }

  /** How many times the pod list was asked for with the right token. */
  int podListings() {
    return server
        .findAll(
            com.github.tomakehurst.wiremock.client.WireMock.getRequestedFor(
                urlPathEqualTo(podsPath())))
        .size();
  }

  private static String podsPath() {
    return "/api/v1/namespaces/" + NAMESPACE + "/pods";
  }

  private synchronized void publish() {
    ObjectNode list = Json.mapper().createObjectNode();
    list.put("apiVersion", "v1").put("kind", "PodList");
    ArrayNode items = list.putArray("items");
    for (var e : pods.entrySet()) {
      ObjectNode pod = items.addObject();
      pod.putObject("metadata")
          .put("name", e.getKey())
          .put("namespace", NAMESPACE)
          .putObject("labels")
          .put("app", APP);
      ObjectNode container = pod.putObject("spec").putArray("containers").addObject();
      container.put("name", "troupe");
      container
          .putArray("ports")
          .addObject()
          .put("name", "management")
          .put("containerPort", managementPort);
      pod.putObject("status").put("phase", "Running").put("podIP", e.getValue());
    }
    server.resetMappings();
    // Without the service account's token: what RBAC answers a pod that may not list pods.
    server.stubFor(
        get(urlPathEqualTo(podsPath()))
            .atPriority(10)
            .willReturn(aResponse().withStatus(403).withBody("{\"kind\":\"Status\"}")));
    server.stubFor(
        get(urlPathEqualTo(podsPath()))
            .atPriority(1)
            .withQueryParam("labelSelector", equalTo("app=" + APP))
            .withHeader("Authorization", equalTo("Bearer " + token))
            .willReturn(
                aResponse()
                    .withStatus(200)
                    .withHeader("Content-Type", "application/json")
                    .withBody(list.toString())));
  }

  @Override
  public void close() {
    server.stop();
  }
}
