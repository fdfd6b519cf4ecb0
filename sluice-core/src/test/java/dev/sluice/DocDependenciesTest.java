package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Every Maven block in the README and the docs closes each dependency, and each of Sluice's artifacts
 * it names is a module of this build, at this build's version: what a reader pastes resolves.
 */
class DocDependenciesTest {
  private static final Path ROOT = Path.of("..");

  @Test
  void everyDependencyBlock_namesAModuleOfThisBuild_atItsVersion() throws Exception {
    Matcher version = Pattern.compile("<artifactId>sluice-parent</artifactId>\\s*<version>([^<]+)<")
        .matcher(Files.readString(ROOT.resolve("pom.xml")));
    assertThat(version.find()).isTrue();
    List<Path> pages = DocPages.pages();
    int named = 0;
    List<String> problems = new ArrayList<>();
    for (Path page : pages) {
      Matcher block = Pattern.compile("^```xml\n(.*?)^```", Pattern.MULTILINE | Pattern.DOTALL)
          .matcher(Files.readString(page));
      while (block.find()) {
        Matcher deps = Pattern.compile("<dependency>(.*?)</dependency>", Pattern.DOTALL)
            .matcher(block.group(1));
        assertThat(block.group(1).split("<dependency>", -1).length - 1)
            .as(page + ": each <dependency> closed").isEqualTo(
                block.group(1).split("</dependency>", -1).length - 1);
        while (deps.find()) {
          String d = deps.group(1);
          if (!"dev.sluice".equals(text(d, "groupId"))) {
            continue;
          }
          named++;
          String artifact = text(d, "artifactId");
          Path pom = ROOT.resolve(artifact).resolve("pom.xml");
          if (!Files.exists(pom) || !Files.readString(pom).contains(
              "<artifactId>" + artifact + "</artifactId>")) {
            problems.add(page + ": " + artifact + " is not a module of this build");
          }
          String v = text(d, "version");
          if (v != null && !v.equals(version.group(1))) {
            problems.add(page + ": " + artifact + " at " + v + ", not " + version.group(1));
          }
        }
      }
    }
    assertThat(named).as("Sluice artifacts named in the docs").isGreaterThan(10);
    assertThat(problems).isEmpty();
  }

  private static String text(String dependency, String tag) {
    Matcher m = Pattern.compile("<" + tag + ">\\s*([^<]*?)\\s*</" + tag + ">").matcher(dependency);
    return m.find() ? m.group(1) : null;
  }
}
