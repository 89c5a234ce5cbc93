package org.acemq.amqp.acceptance;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.zip.ZipEntry;
import org.junit.jupiter.api.Test;

/**
 * What the build packages is publishable: every published jar carries the licence, its version and the commit it was
 * built from, with sources and javadoc jars beside it; the BOM lists exactly the published modules, repeats the
 * parent's metadata and manages the Netty the project builds on; everything else is marked not to be deployed. Runs after the modules were packaged (the
 * integration-test phase of this module, which depends on them).
 */
class ArtifactsIT {

    private static final Pattern DEPENDENCY_ARTIFACT =
            Pattern.compile("<dependency>\\s*<groupId>org\\.acemq\\.amqp</groupId>\\s*<artifactId>([^<]+)</artifactId>");

    @Test
    void everyPublishedJarHasLicenceVersionCommitSourcesAndJavadoc() throws IOException {
        String version = Project.version();
        String revision = expectedRevision();
        String license = Files.readString(Project.file("LICENSE"), StandardCharsets.UTF_8);
        List<String> checked = new ArrayList<>();
        for (Project.Module module : Project.publishedModules()) {
            if (!module.isJar()) {
                continue;
            }
            Path target = module.dir().resolve("target");
            Path jar = target.resolve(module.artifactId() + "-" + version + ".jar");
            Path sources = target.resolve(module.artifactId() + "-" + version + "-sources.jar");
            Path javadoc = target.resolve(module.artifactId() + "-" + version + "-javadoc.jar");
            assertThat(jar).as("the jar of %s (was it packaged?)", module.artifactId()).isRegularFile();
            assertManifest(jar, module.artifactId(), version, revision);
            try (JarFile j = new JarFile(jar.toFile())) {
                assertThat(text(j, "META-INF/LICENSE")).as("%s: META-INF/LICENSE", jar).isEqualTo(license);
                assertThat(text(j, "META-INF/NOTICE")).as("%s: META-INF/NOTICE", jar).contains("AceMQ consumer");
            }
            assertThat(sources).as("sources jar of %s", module.artifactId()).isRegularFile();
            try (JarFile j = new JarFile(sources.toFile())) {
                assertThat(j.stream().anyMatch(e -> e.getName().endsWith(".java"))).as("%s has sources", sources)
                        .isTrue();
            }
            assertThat(javadoc).as("javadoc jar of %s", module.artifactId()).isRegularFile();
            try (JarFile j = new JarFile(javadoc.toFile())) {
                assertThat(j.getEntry("index.html")).as("%s has index.html", javadoc).isNotNull();
                assertThat(j.stream().noneMatch(e -> e.getName().contains("/internal/")))
                        .as("%s documents no internal package", javadoc).isTrue();
            }
            checked.add(module.artifactId());
        }
        System.out.println("published jars checked: " + checked + " (version " + version + ", commit " + revision + ")");
        assertThat(checked).contains("acemq-api", "acemq-consumer-runtime", "acemq-test-support");
    }

    @Test
    void theSampleJarsNameVersionAndCommitButHaveNoSourcesOrJavadocBecauseTheSamplesAreNotPublished()
            throws IOException {
        String version = Project.version();
        for (String sample : List.of("acemq-samples", "acemq-samples-two-services")) {
            Path target = Project.unpublishedModule(sample).resolve("target");
            assertManifest(target.resolve(sample + "-" + version + ".jar"), sample, version, expectedRevision());
            assertManifest(target.resolve(sample + ".jar"), sample, version, expectedRevision());
            assertThat(target.resolve(sample + "-" + version + "-sources.jar")).doesNotExist();
            assertThat(target.resolve(sample + "-" + version + "-javadoc.jar")).doesNotExist();
        }
    }

    @Test
    void theBomListsExactlyThePublishedModulesAndRepeatsTheParentsMetadata() {
        String bom = Project.read("bom/pom.xml");
        Set<String> listed = new LinkedHashSet<>();
        Matcher m = DEPENDENCY_ARTIFACT.matcher(bom);
        while (m.find()) {
            listed.add(m.group(1));
        }
        Set<String> published = Project.publishedModules().stream().filter(Project.Module::isJar)
                .map(Project.Module::artifactId).collect(Collectors.toCollection(LinkedHashSet::new));
        assertThat(listed).as("modules in bom/pom.xml").containsExactlyInAnyOrderElementsOf(published);

        String parent = Project.read("pom.xml");
        String url = element(parent, "acemq.project.url");
        for (String tag : List.of("url", "licenses", "developers", "scm", "inceptionYear")) {
            String inParent = element(parent, tag).replace("${acemq.project.url}", url);
            assertThat(inParent).as("<%s> of the parent POM", tag).isNotBlank();
            assertThat(element(bom, tag)).as("<%s> of the BOM, as in the parent POM", tag).isEqualTo(inParent);
        }
        assertThat(element(parent, "licenses")).contains("<name>Apache-2.0</name>");
    }

    @Test
    void theBomManagesTheNettyTheProjectBuildsAndTestsOn() {
        String bom = Project.read("bom/pom.xml");
        assertThat(bom).as("the BOM imports Netty's BOM at its netty.version")
                .containsPattern("<artifactId>netty-bom</artifactId>\\s*<version>\\$\\{netty.version}</version>"
                        + "\\s*<type>pom</type>\\s*<scope>import</scope>");
        assertThat(element(bom, "netty.version")).as("the BOM's netty.version, as the parent's")
                .isEqualTo(element(Project.read("pom.xml"), "netty.version"));
    }

    @Test
    void everythingThatIsNotPublishedIsUnderTheSamplesOrToolingParentWhichSkipDeploy() throws IOException {
        for (Project.Module module : Project.publishedModules()) {
            assertThat(Project.readPom(module.dir())).as("%s is published", module.artifactId())
                    .doesNotContain("<maven.deploy.skip>true</maven.deploy.skip>");
        }
        List<String> unpublished = new ArrayList<>();
        for (String parent : Project.UNPUBLISHED_PARENTS) {
            String parentPom = Project.read(parent + "/pom.xml");
            assertThat(element(parentPom, "maven.deploy.skip")).as("%s/pom.xml maven.deploy.skip", parent)
                    .isEqualTo("true");
            String parentArtifact = Project.artifactId(parentPom);
            Matcher m = Pattern.compile("<module>([^<]+)</module>").matcher(parentPom);
            while (m.find()) {
                Path dir = Project.file(parent).resolve(m.group(1)).normalize();
                String pom = Project.readPom(dir);
                assertThat(pom).as("%s/pom.xml", dir).contains("<artifactId>" + parentArtifact + "</artifactId>");
                unpublished.add(Project.artifactId(pom));
            }
        }
        assertThat(unpublished).contains("acemq-samples", "acemq-samples-spring-boot", "acemq-samples-two-services",
                "acemq-acceptance", "acemq-reliability");
    }

    // ------------------------------------------------------------------------------------------------------------

    private static void assertManifest(Path jar, String title, String version, String revision) throws IOException {
        assertThat(jar).isRegularFile();
        try (JarFile j = new JarFile(jar.toFile())) {
            Attributes main = j.getManifest().getMainAttributes();
            assertThat(main.getValue("Implementation-Title")).as("%s Implementation-Title", jar).isEqualTo(title);
            assertThat(main.getValue("Implementation-Version")).as("%s Implementation-Version", jar).isEqualTo(version);
            assertThat(main.getValue("SCM-Revision")).as("%s SCM-Revision", jar).isEqualTo(revision);
        }
    }

    /** @return {@code git rev-parse HEAD} of the source tree, or "unknown" where there is no git checkout */
    private static String expectedRevision() {
        PrometheusTools.Run run;
        try {
            run = PrometheusTools.run(Project.root(), "git", "rev-parse", "HEAD");
        } catch (RuntimeException e) {
            return "unknown";
        }
        return run.exitCode() == 0 ? run.output().strip() : "unknown";
    }

    private static String text(JarFile jar, String name) throws IOException {
        ZipEntry entry = jar.getEntry(name);
        assertThat(entry).as("%s in %s", name, jar.getName()).isNotNull();
        return new String(jar.getInputStream(entry).readAllBytes(), StandardCharsets.UTF_8);
    }

    private static String element(String xml, String tag) {
        Matcher m = Pattern.compile("(?s)<" + Pattern.quote(tag) + ">(.*?)</" + Pattern.quote(tag) + ">").matcher(xml);
        return m.find() ? m.group(1).strip().replaceAll("\\s+", " ") : "";
    }
}
