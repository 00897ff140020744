import BuckiaCommandLine
import ScratchProvider

BuckiaCommandLine.main(adding: [ScratchProvider.self])
