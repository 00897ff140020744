import Buckia
import BuckiaHTTP
import Foundation

extension CLI {
    /// The OAuth login of a remote whose authConfig method is okta or oauth, kept in the secret
    /// store under `oauth/<remote>/`.
    static func oauthSession(_ invocation: Invocation, remote: String) throws -> OAuthSession {
        let name = remote.hasSuffix(":") ? String(remote.dropLast()) : remote
        let remoteConfiguration = try invocation.remotes().configuration(named: name)
        var configuration = try OAuthConfiguration(remoteConfiguration.authConfig)
        configuration.name = name
        try SecretContext.check("oauth/\(name)/refresh")
        // The issuer is asked under the remote's HTTP options (connectTimeoutSeconds,
        // stallTimeoutSeconds, maxAttempts), and the flags over them: an issuer that never
        // answers is given up on, as a storage server is.
        return OAuthSession(
            configuration: configuration, store: FileSecretStore.standard(environment: invocation.environment),
            http: try httpClient(invocation, remoteOptions: remoteConfiguration.options))
    }

    static let loginCommand = Command(
        name: "login", summary: "Log in to a remote's OAuth or Okta issuer from this terminal (the device flow).",
        usage: "login REMOTE [--connect-timeout S] [--stall-timeout S] [--max-attempts N]", positionals: 1...1, options: httpOptionHelp,
        details: """
            REMOTE's authConfig names the issuer: method okta with the credentials domain and
            clientId, or method oauth with issuer and clientId (and optional scopes). login prints
            where to go and the code to type there, waits for the approval, and saves the tokens in
            the secret store (secrets list shows them as oauth/REMOTE/…); they are refreshed before
            they expire. Exit 4 when the login is refused or its code expires.
            """
    ) { invocation in
        let session = try oauthSession(invocation, remote: invocation.positionals[0])
        do {
            try await session.login { authorization in
                Console.error("To log in, open \(authorization.verificationURI.absoluteString) and enter the code \(authorization.userCode)")
                if let complete = authorization.verificationURIComplete { Console.error("(or open \(complete.absoluteString))") }
            }
        } catch let failure as OAuthFailure {
            throw failure.error
        }
        Console.out("logged in to \(session.configuration.issuer.absoluteString) as \(session.configuration.name)")
        return .success
    }

    static let logoutCommand = Command(
        name: "logout", summary: "Forget a remote's OAuth login, revoking its refresh token at the issuer.",
        usage: "logout REMOTE [--keep-remote-session] [--connect-timeout S] [--stall-timeout S] [--max-attempts N]", positionals: 1...1,
        options: [.flag("keep-remote-session", "Forget the tokens here without revoking them at the issuer.")] + httpOptionHelp,
        details: "Exit 3 when there was no login to forget."
    ) { invocation in
        let session = try oauthSession(invocation, remote: invocation.positionals[0])
        let had: Bool
        do {
            had = try await session.logout(revoke: !invocation.arguments.flag("keep-remote-session"))
        } catch let failure as OAuthFailure {
            throw failure.error
        }
        guard had else { throw BuckiaError(.notFound, "There is no login for \(session.configuration.name) to forget.") }
        Console.out("logged out of \(session.configuration.name)")
        return .success
    }
}
