package dev.sluice.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.StringWriter;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** docs/grpc.md's Java: every block compiles as it is written, imports included. */
class GrpcDocTest {
  @TempDir
  Path out;

  @Test
  void everyJavaBlock_compiles() throws Exception {
    String doc = Files.readString(Path.of("../docs/grpc.md"));
    Matcher m = Pattern.compile("```java\n(.*?)```", Pattern.DOTALL).matcher(doc);
    List<JavaFileObject> sources = new ArrayList<>();
    while (m.find()) {
      String code = m.group(1);
      Matcher name = Pattern.compile("class (\\w+)").matcher(code);
      assertThat(name.find()).as("a block declares a class: %s", code).isTrue();
      sources.add(new SimpleJavaFileObject(URI.create("string:///" + name.group(1)
          + ".java"), JavaFileObject.Kind.SOURCE) {
        @Override
        public CharSequence getCharContent(boolean ignoreEncodingErrors) {
          return code;
        }
      });
    }
    assertThat(sources).as("the server, the client and the budget's blocks").hasSize(3);
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    StringWriter errors = new StringWriter();
    // the tests run on the module path: its jars and directories are the snippets' class path
    String path = System.getProperty("jdk.module.path", "") + File.pathSeparator
        + System.getProperty("java.class.path");
    boolean ok = javac.getTask(errors, null, null, List.of("-d", out.toString(), "-cp", path),
        null, sources).call();
    assertThat(ok).as(errors.toString()).isTrue();
  }
}
