package dev.troupe.bench.hostile;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A scripted hostile suite against one node (issue 21): auth, malformed bodies, numeric edges,
 * encodings, template/regex/schema/grammar bombs, huge arrays, resource abuse, path and id abuse,
 * log abuse, pipelining and junk on the cluster port. The node runs in its own JVM ({@link Node});
 * after every case the suite checks that it is alive and that {@code /health} answers. At the end
 * the node is killed (SIGKILL) and restarted on its data directory, and every log write it
 * acknowledged is read back.
 *
 * <p>Counts per family: cases, answers by class (the 501 that docs/api.md keeps for unknown methods
 * and the HTTP/2 preface apart), other 5xx, hangs (no answer within 90 s), crashes (the process
 * gone or {@code /health} failing after the case) and wrong answers (a refusal expected and a 2xx
 * given, or the reverse). Exit status 0 only with no crash, hang, other 5xx, wrong answer or lost
 * write.
 *
 * <p>Usage: {@code HostileSuite [heap=2g]}, with the bench module's classpath (docs/api.md,
 * "Hostile suite").
 */
public final class HostileSuite {
  private HostileSuite() {}

  /** One family's counts. */
  private static final class Tally {
    int cases, ok, client, closed, notImplemented, server, hangs, crashes, wrong;
    final List<String> notes = new ArrayList<>();
  }

  public static void main(String[] args) throws Exception {
    String heap = args.length > 0 ? args[0] : "2g";
    Path dir = Files.createTempDirectory("troupe-hostile");
    Path log = dir.resolve("node.log");
    System.out.println("node log: " + log);
    Path outcomes = dir.resolve("cases.tsv");
    System.out.println("every case's answer: " + outcomes);
    Map<String, Tally> tallies = new LinkedHashMap<>();
    LogCases logs = new LogCases();
    List<String> lost;
    long t0 = System.nanoTime();
    try (Node node = Node.start(dir.resolve("data"), log, heap)) {
      Target t = node.target;
      t.model =
          new ObjectMapper()
              .readTree(t.get("/v1/models").body())
              .path("data")
              .path(0)
              .path("id")
              .asText();
      logs.setUp(t);
      List<Case> cases = new ArrayList<>();
      cases.addAll(EdgeCases.auth());
      cases.addAll(BodyCases.malformed());
      cases.addAll(BodyCases.numeric());
      cases.addAll(BodyCases.encodings());
      cases.addAll(BombCases.templates());
      cases.addAll(BombCases.regexes());
      cases.addAll(BombCases.schemas());
      cases.addAll(BombCases.grammars());
      cases.addAll(BodyCases.arrays());
      cases.addAll(ResourceCases.all());
      cases.addAll(EdgeCases.paths());
      cases.addAll(logs.all());
      cases.addAll(EdgeCases.pipelining());
      cases.addAll(EdgeCases.ports());
      for (Case c : cases) {
        Tally tally = tallies.computeIfAbsent(c.family(), k -> new Tally());
        long start = System.nanoTime();
        Reply r;
        try {
          r = c.action().run(t);
        } catch (Exception e) {
          r = Reply.closed(e.toString());
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        boolean up = node.alive() && node.healthy();
        count(tally, c, r, up, seconds);
        Files.writeString(
            outcomes,
            String.format(
                Locale.ROOT,
                "%s\t%s\t%s\t%d\t%.2f\t%s%n",
                c.family(),
                c.name().replace('\t', ' ').replace('\n', ' '),
                c.expect(),
                r.hung() ? -2 : r.status(),
                seconds,
                up ? "up" : "DOWN"),
            java.nio.file.StandardOpenOption.CREATE,
            java.nio.file.StandardOpenOption.APPEND);
        if (!up) node.killAndRestart(); // counted; go on with a fresh node
      }
      node.killAndRestart();
      lost = logs.lost(t);
    }
    report(tallies, logs, lost, (System.nanoTime() - t0) / 1e9);
    boolean clean =
        lost.isEmpty()
            && tallies.values().stream()
                .allMatch(x -> x.server == 0 && x.hangs == 0 && x.crashes == 0 && x.wrong == 0);
    System.exit(clean ? 0 : 1);
  }

  private static void count(Tally tally, Case c, Reply r, boolean up, double seconds) {
    tally.cases++;
    if (r.hung()) tally.hangs++;
    else if (r.status() == -1) tally.closed++;
    else if (r.status() == 501 && c.expect() == Case.Expect.NOT_IMPLEMENTED) tally.notImplemented++;
    else if (r.status() >= 500) tally.server++;
    else if (r.status() >= 400) tally.client++;
    else tally.ok++;
    if (!up) tally.crashes++;
    boolean wrong = !c.expect().matches(r);
    if (wrong) tally.wrong++;
    boolean serverError = r.serverError() && !(r.status() == 501 && !wrong);
    if (wrong || r.hung() || serverError || !up)
      tally.notes.add(
          String.format(
              Locale.ROOT,
              "  %s%s%s%s: %s -> %s %s (%.1f s)",
              wrong ? "[wrong answer] " : "",
              r.hung() ? "[hang] " : "",
              serverError ? "[5xx] " : "",
              up ? "" : "[crash] ",
              c.name(),
              r.status(),
              r.body().substring(0, Math.min(200, r.body().length())).replace('\n', ' '),
              seconds));
  }

  private static void report(
      Map<String, Tally> tallies, LogCases logs, List<String> lost, double seconds) {
    System.out.printf(
        Locale.ROOT,
        "%n%-22s %6s %6s %6s %7s %5s %5s %6s %8s %6s%n",
        "family",
        "cases",
        "2xx",
        "4xx",
        "closed",
        "501",
        "5xx",
        "hangs",
        "crashes",
        "wrong");
    Tally total = new Tally();
    for (Map.Entry<String, Tally> e : tallies.entrySet()) {
      Tally x = e.getValue();
      System.out.printf(
          Locale.ROOT,
          "%-22s %6d %6d %6d %7d %5d %5d %6d %8d %6d%n",
          e.getKey(),
          x.cases,
          x.ok,
          x.client,
          x.closed,
          x.notImplemented,
          x.server,
          x.hangs,
          x.crashes,
          x.wrong);
      total.cases += x.cases;
      total.ok += x.ok;
      total.client += x.client;
      total.closed += x.closed;
      total.notImplemented += x.notImplemented;
      total.server += x.server;
      total.hangs += x.hangs;
      total.crashes += x.crashes;
      total.wrong += x.wrong;
    }
    System.out.printf(
        Locale.ROOT,
        "%-22s %6d %6d %6d %7d %5d %5d %6d %8d %6d%n",
        "total",
        total.cases,
        total.ok,
        total.client,
        total.closed,
        total.notImplemented,
        total.server,
        total.hangs,
        total.crashes,
        total.wrong);
    System.out.printf(
        Locale.ROOT,
        "log writes acknowledged: %d, read back after SIGKILL and restart: %d lost%n",
        logs.acknowledged.size(),
        lost.size());
    for (String l : lost) System.out.println("  " + l);
    for (Map.Entry<String, Tally> e : tallies.entrySet())
      if (!e.getValue().notes.isEmpty()) {
        System.out.println(e.getKey() + ":");
        e.getValue().notes.forEach(System.out::println);
      }
    System.out.printf(Locale.ROOT, "%.0f s%n", seconds);
  }
}
