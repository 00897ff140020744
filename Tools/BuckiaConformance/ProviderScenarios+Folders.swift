import BuckiaCore
import Foundation

extension ProviderConformance {
    /// Folders a provider keeps apart from its objects (``Capability/folders``).
    static var folderScenarios: [ProviderScenario] {
        [
            ProviderScenario(
                "folders: made, dated, kept while they hold objects, removed when empty",
                contract: "createFolder makes a folder (again is not an error) that folderDate dates; deleteFolder leaves a folder that holds an object and removes an empty one.",
                requires: [.folders]
            ) { context in
                let folder = try context.key("markers/photos")
                try Expect.that(try await context.provider.folderDate(folder) == nil, "folderDate of a folder not made yet is nil")
                try await context.provider.createFolder(folder)
                try await context.provider.createFolder(folder)
                try Expect.that(try await context.provider.folderDate(folder) != nil, "folderDate of a folder just made")
                let inside = try context.key("markers/photos/a.jpg")
                try await context.provider.uploadData(Data("a".utf8), remotePath: inside, options: UploadOptions())
                try await context.provider.deleteFolder(folder)
                try Expect.that(try await context.provider.folderDate(folder) != nil, "a folder that holds an object stays")
                try Expect.that(try await context.provider.stat(remotePath: inside) != nil, "deleteFolder left the object in it")
                try await context.provider.deleteFile(remotePath: inside)
                try await context.provider.createFolder(folder)
                try await context.provider.deleteFolder(folder)
                try Expect.that(try await context.provider.folderDate(folder) == nil, "an empty folder is removed")
                try await context.provider.deleteFolder(folder)
            },
            ProviderScenario(
                "folders: an object's name is not a folder", contract: "createFolder where an object is throws alreadyExists; folderDate of an object is nil.",
                requires: [.folders]
            ) { context in
                let key = try context.key("markers/object")
                try await context.provider.uploadData(Data("x".utf8), remotePath: key, options: UploadOptions())
                try await Expect.error(.alreadyExists, "createFolder over an object") { try await context.provider.createFolder(key) }
                try Expect.that(try await context.provider.folderDate(key) == nil, "folderDate of an object is nil")
                try await context.provider.deleteFolder(key)
                try Expect.that(try await context.provider.stat(remotePath: key) != nil, "deleteFolder of an object's name left the object")
            },
            ProviderScenario(
                "folders: none without the capability", contract: "A provider without folders throws unsupported for each folder call.",
                excludedBy: [.folders]
            ) { context in
                let key = try context.key("markers/photos")
                try await Expect.error(.unsupported, "createFolder") { try await context.provider.createFolder(key) }
                try await Expect.error(.unsupported, "folderDate") { try await context.provider.folderDate(key) }
                try await Expect.error(.unsupported, "deleteFolder") { try await context.provider.deleteFolder(key) }
            },
        ]
    }
}
