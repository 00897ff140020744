import BuckiaCore
import BuckiaSecurity
import Testing

/// Grant templates: `${sub}` as a whole folder name, filled only with a subject that is one safe
/// folder name, so no login can name its way into another user's folder.
@Suite("Grant templates")
struct GrantTemplateTests {
    static let template = ["read,list:home/${sub}/", "write:home/${sub}/inbound/", "deliver:home/*/inbound/", "read:shared/", "write:keys/${sub}.jwk"]

    @Test("a subject is filled into each ${sub}, and the grants then decide as written", arguments: [
        "u1", "00u1abcdEFGH2345", "auth0|65f0c3", "google-oauth2|1049", "a.b@example.com", "user_1-2+3=4", "108234567890123456789",
    ])
    func filled(_ subject: String) throws {
        let grants = try GrantTemplate(parsing: Self.template).grants(subject: subject)
        #expect(grants.grants.map(\.prefix) == ["home/\(subject)/", "home/\(subject)/inbound/", "home/*/inbound/", "shared/", "keys/\(subject).jwk"])
        #expect(grants.permits(.write, key: "keys/\(subject).jwk"))
        #expect(!grants.permits(.write, key: "keys/other.jwk"))
        #expect(grants.permits(.read, key: "home/\(subject)/notes.txt"))
        #expect(grants.permits(.write, key: "home/\(subject)/inbound/x.sqlite"))
        #expect(!grants.permits(.write, key: "home/\(subject)/notes.txt"))
        #expect(!grants.permits(.read, key: "home/other/notes.txt"))
        #expect(grants.permits(.deliver, key: "home/other/inbound/x.sqlite"))
    }

    @Test("a subject that is not one safe folder name is refused, whatever the issuer signed", arguments: [
        "", ".", "..", "../u2", "u2/inbound", "/", "u1/", "*", "u*", "..\\u2", "u1%2Fu2", "%2e%2e", "u 1", "u1\n", "u1\u{0}", "u1\u{202E}",
        "ü", "ｕ１", "${sub}", "$HOME", "{u1}", "u1.", String(repeating: "u", count: 256),
    ])
    func hostile(_ subject: String) throws {
        let template = try GrantTemplate(parsing: Self.template)
        let error = #expect(throws: BuckiaError.self) { try template.grants(subject: subject) }
        #expect(error?.code == .permissionDenied)
        #expect(error?.message.contains("cannot name a folder") == true, "\(error.map { "\($0)" } ?? "")")
    }

    @Test("a template is refused when a variable is not a whole ${sub} folder name, or a grant is", arguments: [
        ["read:home/x${sub}/"], ["read:home/${sub}/x/${sub}$/"], ["read:home/${user}/"], ["read:home/${sub/"], ["read:home/$sub}/"], ["read:home/{sub}/"],
        ["read:home/${sub}${sub}/"], [], ["read:"], ["read:../${sub}/"], ["root:home/${sub}/"], ["home/${sub}/"],
    ])
    func badTemplates(_ texts: [String]) {
        #expect(throws: BuckiaError.self) { try GrantTemplate(parsing: texts) }
    }

    @Test("a 255-byte subject is the longest filled in")
    func longest() throws {
        let subject = String(repeating: "u", count: 255)
        #expect(try GrantTemplate(parsing: ["read:home/${sub}/"]).grants(subject: subject).grants.first?.prefix == "home/\(subject)/")
    }
}
