/// Which release of Buckia this build is.
///
/// The string is the release's semantic version, spelled as its git tag and its heading in
/// CHANGELOG.md are (a test holds the three together). `buckia --version` prints it, and HTTP
/// requests carry it in their `User-Agent`, so a server's log says which Buckia sent them.
/// Until 1.0 a minor release may change public API; the CHANGELOG says what changed and how
/// to follow it.
public enum BuckiaVersion {
    /// The version, `MAJOR.MINOR.PATCH`: "0.9.0".
    public static let current = "0.9.0"

    /// The `User-Agent` of requests Buckia sends: `Buckia/0.9.0`, or `Buckia-S3/0.9.0` with a
    /// `component` (RFC 9110's product token, `name/version`).
    public static func userAgent(component: String? = nil) -> String {
        "Buckia\(component.map { "-\($0)" } ?? "")/\(current)"
    }
}
