package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** Rules every module's main code keeps, read from the sources of the whole build. */
class HouseRulesTest {
  private static final Path ROOT = Path.of("..");
  private static final Pattern QUALIFIED =
      Pattern.compile("(?<![\\w.\"@])((?:[a-z][a-z0-9_]*\\.){2,})([A-Z]\\w*)");
  private static final Pattern IMPORT = Pattern.compile("^import ([\\w.]+)\\.(\\w+);", Pattern.MULTILINE);
  private static final Pattern DECLARED =
      Pattern.compile("\\b(?:class|interface|enum|record)\\s+([A-Z]\\w*)");
  private static final Pattern COMMENT_OR_STRING =
      Pattern.compile("/\\*.*?\\*/|//[^\\n]*|\"(?:\\\\.|[^\"\\\\])*\"", Pattern.DOTALL);

  /**
   * A type is named by its simple name and an import, not written out in full in code, except
   * where the simple name is taken (by another import or a type declared in the same file).
   */
  @Test
  void noInlineFullyQualifiedTypeNames_inMainCode() throws IOException {
    List<String> found = new ArrayList<>();
    for (Path file : mainSources()) {
      String source = Files.readString(file);
      Map<String, String> imported = new HashMap<>();
      Matcher i = IMPORT.matcher(source);
      while (i.find()) {
        imported.put(i.group(2), i.group(1) + "." + i.group(2));
      }
      Set<String> declared = new HashSet<>();
      Matcher d = DECLARED.matcher(source);
      while (d.find()) {
        declared.add(d.group(1));
      }
      String code = COMMENT_OR_STRING.matcher(source).replaceAll(" ");
      int line = 0;
      for (String text : code.split("\n", -1)) {
        line++;
        if (text.startsWith("import ") || text.startsWith("package ")) {
          continue;
        }
        Matcher q = QUALIFIED.matcher(text);
        while (q.find()) {
          String simple = q.group(2);
          String qualified = q.group(1) + simple;
          boolean taken = declared.contains(simple)
              || (imported.containsKey(simple) && !imported.get(simple).equals(qualified));
          if (!taken) {
            found.add(ROOT.relativize(file) + ":" + line + ": " + qualified);
          }
        }
      }
    }
    assertThat(found).as("import these instead").isEmpty();
  }

  /** Each package's main classes live in one module: no module adds classes to another's package. */
  @Test
  void noModulePutsClassesInAnothersPackage() throws IOException {
    Pattern pkg = Pattern.compile("^package ([\\w.]+);", Pattern.MULTILINE);
    Map<String, Set<String>> modulesOfPackage = new HashMap<>();
    try (Stream<Path> modules = Files.list(ROOT)) {
      for (Path module : modules.filter(m -> Files.isDirectory(m.resolve("src/main/java")))
          .toList()) {
        try (Stream<Path> walk = Files.walk(module.resolve("src/main/java"))) {
          for (Path f : walk.filter(x -> x.toString().endsWith(".java"))
              .filter(x -> !x.getFileName().toString().equals("module-info.java")).toList()) {
            Matcher m = pkg.matcher(Files.readString(f));
            if (m.find()) {
              modulesOfPackage.computeIfAbsent(m.group(1), k -> new HashSet<>())
                  .add(module.getFileName().toString());
            }
          }
        }
      }
    }
    assertThat(modulesOfPackage).as("packages read").hasSizeGreaterThan(10);
    Map<String, Set<String>> split = new HashMap<>();
    modulesOfPackage.forEach((p, m) -> {
      if (m.size() > 1) {
        split.put(p, m);
      }
    });
    assertThat(split).as("packages whose main classes several modules hold").isEmpty();
  }

  private static List<Path> mainSources() throws IOException {
    List<Path> files = new ArrayList<>();
    try (Stream<Path> modules = Files.list(ROOT)) {
      for (Path module : modules.filter(m -> Files.isDirectory(m.resolve("src/main/java")))
          .filter(m -> !m.getFileName().toString().equals("sluice-benchmarks")).toList()) {
        try (Stream<Path> walk = Files.walk(module.resolve("src/main/java"))) {
          walk.filter(f -> f.toString().endsWith(".java"))
              .filter(f -> !f.getFileName().toString().equals("module-info.java"))
              .forEach(files::add);
        }
      }
    }
    assertThat(files).hasSizeGreaterThan(100);
    return files;
  }
}
