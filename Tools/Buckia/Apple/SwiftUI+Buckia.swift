// Compiled only where SwiftUI exists (Apple platforms): never on the machines that build and
// test Buckia (Docs/Platforms.md lists this file). The model it hands views, FileCatalogModel
// with its syncProgress, is Observation, compiled and tested everywhere.
#if canImport(SwiftUI)
import SwiftUI

extension EnvironmentValues {
    /// The client the app's views use (seed 002's `buckiaClient`): nil until a view above
    /// sets it, with ``SwiftUI/View/buckia(_:model:)`` or `.environment(\.buckiaClient, client)`.
    public var buckiaClient: BuckiaClient? {
        get { self[BuckiaClientKey.self] }
        set { self[BuckiaClientKey.self] = newValue }
    }
}

private struct BuckiaClientKey: EnvironmentKey {
    static let defaultValue: BuckiaClient? = nil
}

extension View {
    /// Hands the views below `client` (as `@Environment(\.buckiaClient)`) and `model` (as
    /// `@Environment(FileCatalogModel.self)`), whose ``BuckiaCatalog/FileCatalogModel/syncProgress``
    /// and ``BuckiaCatalog/FileCatalogModel/files`` redraw them as sync runs and the catalog
    /// changes.
    public func buckia(_ client: BuckiaClient, model: FileCatalogModel) -> some View {
        environment(\.buckiaClient, client).environment(model)
    }
}
#endif
