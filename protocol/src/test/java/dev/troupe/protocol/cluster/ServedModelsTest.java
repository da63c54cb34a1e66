package dev.troupe.protocol.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.typesafe.config.ConfigFactory;
import java.util.List;
import org.junit.jupiter.api.Test;

class ServedModelsTest {

  @Test
  void defaultIsTheDemoModel() {
    ServedModels models = ServedModels.fromConfig(ConfigFactory.load());
    assertEquals("demo", models.defaultModel().orElseThrow().name());
    assertEquals(List.of("demo#0"), models.find("demo").orElseThrow().entityIds());
  }

  @Test
  void aModelMayHaveAliases() {
    ServedModels models =
        ServedModels.fromConfig(
            ConfigFactory.parseString(
                "troupe.models = [{name = qwen, aliases = [q, \"Qwen/Q\"]}]"));
    var m = models.find("qwen").orElseThrow();
    assertEquals(List.of("q", "Qwen/Q"), m.aliases());
    assertEquals(List.of("qwen", "q", "Qwen/Q"), m.names());
    assertEquals(List.of("qwen#0"), m.entityIds());
    assertThrows(
        IllegalArgumentException.class,
        () ->
            new ServedModels.ServedModel(
                "a", "demo", 1, "fcfs", null, null, false, null, List.of("a")));
  }

  @Test
  void readsEveryField() {
    ServedModels models =
        ServedModels.fromConfig(
            ConfigFactory.parseString(
                "troupe.models = [{name = \"org/m.v1\", path = \"/m\", replicas = 2,"
                    + " scheduling-policy = priority}, {name = d}]"));
    var m = models.find("org/m.v1").orElseThrow();
    assertEquals(List.of("org/m.v1#0", "org/m.v1#1"), m.entityIds());
    assertEquals(true, m.usesPriority());
    assertEquals(true, models.find("d").orElseThrow().isDemo());
    assertThrows(
        IllegalArgumentException.class,
        () ->
            ServedModels.fromConfig(
                ConfigFactory.parseString("troupe.models = [{name = a}, {name = a}]")));
    assertThrows(
        IllegalArgumentException.class,
        () ->
            ServedModels.fromConfig(
                ConfigFactory.parseString(
                    "troupe.models = [{name = a}, {name = b, aliases = [a]}]")),
        "an alias is a name like any other: never two models' names");
    assertThrows(
        IllegalArgumentException.class,
        () ->
            ServedModels.fromConfig(
                ConfigFactory.parseString(
                    "troupe.models = [{name = a, scheduling-policy = lifo}]")));
  }
}
